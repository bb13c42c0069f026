// The MCP TypeScript client 2.x, with an elicitation handler, against the
// sidecar's MCP door in front of an agent that asks before it answers, for
// proxy/mcp's TestSDKElicitation. Usage:
//   NODE_PATH=<node_modules> node elicit.mjs <endpoint URL> <mode>
// mode: "auto" (2026-07-28: the client fulfils input-required results
// itself) or "legacy" (initialize: elicitation/create on the call's
// stream). Prints one JSON line per step; exits 1 on an unexpected error.
import { createRequire } from "node:module";

// require, unlike import, finds the client through NODE_PATH.
const require = createRequire(import.meta.url);
const { Client, StreamableHTTPClientTransport } = require("@modelcontextprotocol/client");

const out = (v) => console.log(JSON.stringify(v));
const [url, mode] = process.argv.slice(2);
const options = { capabilities: { elicitation: {} } };
if (mode === "auto") options.versionNegotiation = { mode: "auto" };
const transport = new StreamableHTTPClientTransport(new URL(url));
const client = new Client({ name: "sidecar-test", version: "1.0.0" }, options);
client.onerror = (e) => console.error("client error:", e);
const asked = [];
client.setRequestHandler("elicitation/create", async (req) => {
  asked.push((req.params ?? req).message);
  return { action: "accept", content: { approve: true } };
});
await client.connect(transport);
out({ step: "connect", version: client.getNegotiatedProtocolVersion() });
for (const name of ["confirm", "approve"]) {
  const r = await client.callTool({ name, arguments: { amount: 5 } });
  out({ step: name, asked: asked.splice(0), text: r.content[0].text, isError: r.isError ?? false });
}
await client.close();
