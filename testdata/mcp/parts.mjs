// The MCP TypeScript SDK 1.x client reads a tool's images, audio and files
// through the sidecar's MCP door, for proxy/mcp's TestSDK1Parts. Usage:
//   NODE_PATH=<node_modules> node parts.mjs <endpoint URL> <records JSON>
// Calls the tool "records" with {records} (the agent's reply, record by
// record), with progress, and prints one JSON line per content of the
// result (an image's, audio's or resource's bytes decoded, as hex: the
// bytes the client has), then its structuredContent; exits 1 on an
// unexpected error (the SDK checks the result against its schema).
import { createRequire } from "node:module";

// require, unlike import, finds the SDK through NODE_PATH.
const require = createRequire(import.meta.url);
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

const out = (v) => console.log(JSON.stringify(v));
const hex = (b64) => Buffer.from(b64, "base64").toString("hex");
const [url, records] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url));
const client = new Client({ name: "sidecar-test", version: "1.0.0" });
client.onerror = (e) => console.error("client error:", e);
await client.connect(transport);

const progress = [];
const result = await client.callTool({ name: "records", arguments: { records: JSON.parse(records) } }, undefined,
  { onprogress: (p) => progress.push(p.message) });
out({ step: "progress", progress, isError: result.isError ?? false });
for (const c of result.content) {
  switch (c.type) {
    case "image":
    case "audio":
      out({ type: c.type, mimeType: c.mimeType, bytes: hex(c.data) });
      break;
    case "resource":
      out({ type: c.type, uri: c.resource.uri, mimeType: c.resource.mimeType, bytes: hex(c.resource.blob) });
      break;
    case "resource_link":
      out({ type: c.type, uri: c.uri, name: c.name, mimeType: c.mimeType });
      break;
    default:
      out({ type: c.type, text: c.text });
  }
}
out({ structured: result.structuredContent ?? null });
await transport.terminateSession();
await client.close();
