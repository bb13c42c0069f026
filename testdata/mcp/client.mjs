// The MCP TypeScript SDK 1.x client (@modelcontextprotocol/sdk: Client and
// StreamableHTTPClientTransport, the 2025 initialize revisions) against the
// sidecar's MCP door, for proxy/mcp's TestSDK1Client. Usage:
//   NODE_PATH=<node_modules> node client.mjs <endpoint URL>
// Prints one JSON line per step; exits 1 on an unexpected error.
import { createRequire } from "node:module";

// require, unlike import, finds the SDK through NODE_PATH.
const require = createRequire(import.meta.url);
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

const out = (v) => console.log(JSON.stringify(v));
const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
const client = new Client({ name: "sidecar-test", version: "1.0.0" });
// What the SDK swallows (an SSE stream cut before its result, a message it
// cannot parse: the call then waits for its timeout), on stderr, which
// the Go test shows when the client fails.
client.onerror = (e) => console.error("client error:", e);
await client.connect(transport);
out({ step: "connect", version: transport.protocolVersion, session: typeof transport.sessionId === "string",
  server: client.getServerVersion()?.name, tools: client.getServerCapabilities()?.tools !== undefined });

const { tools } = await client.listTools();
out({ step: "tools", tools: tools.map((t) => [t.name, t.description ?? "", t.inputSchema.type, Object.keys(t.inputSchema.properties ?? {})]) });

const ask = await client.callTool({ name: "ask", arguments: { message: "what is up" } });
out({ step: "ask", text: ask.content[0].text, structured: ask.structuredContent ?? null, isError: ask.isError ?? false });

const progress = [];
const story = await client.callTool({ name: "story", arguments: { message: "the end" } }, undefined,
  { onprogress: (p) => progress.push([p.progress, p.message]) });
out({ step: "story", text: story.content[0].text, progress, isError: story.isError ?? false });

const fail = await client.callTool({ name: "fail", arguments: {} });
out({ step: "fail", isError: fail.isError ?? false, text: fail.content[0].text });

const late = await client.callTool({ name: "fail_late", arguments: {} }, undefined, { onprogress: () => {} });
out({ step: "fail_late", isError: late.isError ?? false, text: late.content[0].text });

try {
  await client.callTool({ name: "nope", arguments: {} });
  out({ step: "unknown tool", error: null });
} catch (e) {
  out({ step: "unknown tool", code: e.code, message: e.message });
}

await transport.terminateSession();
out({ step: "terminate", session: transport.sessionId ?? null });
await client.close();
