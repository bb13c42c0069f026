// The MCP TypeScript client 2.x (@modelcontextprotocol/client: Client and
// StreamableHTTPClientTransport) against the sidecar's MCP door, for
// proxy/mcp's TestSDK2Client. Usage:
//   NODE_PATH=<node_modules> node client.mjs <endpoint URL> <mode>
// mode: "auto" (probe with server/discover, 2026-07-28), "pin" (2026-07-28
// only) or "legacy" (the client's default: initialize). Prints one JSON
// line per step; exits 1 on an unexpected error.
import { createRequire } from "node:module";

// require, unlike import, finds the client through NODE_PATH.
const require = createRequire(import.meta.url);
const { Client, StreamableHTTPClientTransport } = require("@modelcontextprotocol/client");

const out = (v) => console.log(JSON.stringify(v));
const [url, mode] = process.argv.slice(2);
const negotiation = { auto: { mode: "auto" }, pin: { mode: { pin: "2026-07-28" } }, legacy: undefined }[mode];
const transport = new StreamableHTTPClientTransport(new URL(url));
const client = new Client({ name: "sidecar-test", version: "1.0.0" }, negotiation ? { versionNegotiation: negotiation } : {});
// What the SDK swallows (an SSE stream cut before its result, a message it
// cannot parse: the call then waits for its timeout), on stderr, which
// the Go test shows when the client fails.
client.onerror = (e) => console.error("client error:", e);
await client.connect(transport);
out({ step: "connect", version: client.getNegotiatedProtocolVersion(), server: client.getServerVersion()?.name,
  tools: client.getServerCapabilities()?.tools !== undefined });

const { tools } = await client.listTools();
out({ step: "tools", tools: tools.map((t) => [t.name, t.description ?? "", t.inputSchema.type, Object.keys(t.inputSchema.properties ?? {})]) });

const ask = await client.callTool({ name: "ask", arguments: { message: "what is up" } });
out({ step: "ask", text: ask.content[0].text, structured: ask.structuredContent ?? null, isError: ask.isError ?? false });

const progress = [];
const story = await client.callTool({ name: "story", arguments: { message: "the end" } },
  { onprogress: (p) => progress.push([p.progress, p.message]) });
out({ step: "story", text: story.content[0].text, progress, isError: story.isError ?? false });

const fail = await client.callTool({ name: "fail", arguments: {} });
out({ step: "fail", isError: fail.isError ?? false, text: fail.content[0].text });

try {
  await client.callTool({ name: "nope", arguments: {} });
  out({ step: "unknown tool", error: null });
} catch (e) {
  out({ step: "unknown tool", code: e.code, message: e.message });
}
await client.close();
