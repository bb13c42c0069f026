// The MCP TypeScript SDK 1.x client, with an elicitation handler, against
// the sidecar's MCP door in front of an agent that asks before it answers,
// for proxy/mcp's TestSDKElicitation. Usage:
//   NODE_PATH=<node_modules> node elicit.mjs <endpoint URL>
// Prints one JSON line per step; exits 1 on an unexpected error.
import { createRequire } from "node:module";

// require, unlike import, finds the SDK through NODE_PATH.
const require = createRequire(import.meta.url);
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ElicitRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

const out = (v) => console.log(JSON.stringify(v));
const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
const client = new Client({ name: "sidecar-test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.onerror = (e) => console.error("client error:", e);
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.params.message);
  return { action: "accept", content: { approve: true } };
});
await client.connect(transport);
out({ step: "connect", version: transport.protocolVersion });
for (const name of ["confirm", "approve"]) {
  const r = await client.callTool({ name, arguments: { amount: 5 } });
  out({ step: name, asked: asked.splice(0), text: r.content[0].text, isError: r.isError ?? false });
}
await transport.terminateSession();
await client.close();
