// The MCP TypeScript SDK 1.x client aborting a tools/call, for proxy/mcp's
// TestSDK1Cancel. Usage:
//   NODE_PATH=<node_modules> node cancel.mjs <endpoint URL>
// Calls the streaming tool "slow" with an AbortController and aborts it at
// its first progress notification (the SDK then sends
// notifications/cancelled), then calls "ask". Prints one JSON line per
// step; exits 1 on an unexpected error.
import { createRequire } from "node:module";

// require, unlike import, finds the SDK through NODE_PATH.
const require = createRequire(import.meta.url);
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

const out = (v) => console.log(JSON.stringify(v));
const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
const client = new Client({ name: "sidecar-test", version: "1.0.0" });
await client.connect(transport);

const abort = new AbortController();
try {
  await client.callTool({ name: "slow", arguments: {} }, undefined,
    { signal: abort.signal, onprogress: () => abort.abort("enough") });
  out({ step: "slow", aborted: false });
} catch (e) {
  out({ step: "slow", aborted: abort.signal.aborted });
}

const ask = await client.callTool({ name: "ask", arguments: {} });
out({ step: "ask", text: ask.content[0].text, isError: ask.isError ?? false });
await client.close();
