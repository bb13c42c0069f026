// An MCP server as an agent: the MCP TypeScript SDK's Streamable HTTP
// transport (@modelcontextprotocol/sdk, pinned in package.json), stateless
// (no session ids), one tool, "echo". upstream's TestAcceptMCPServer runs
// it behind the sidecar with NODE_PATH set to the node_modules that
// install.sh prints.
//
//   node server.mjs
//
// It listens on 127.0.0.1 on a port of the system's choice, serves POST
// /mcp, and prints that port on stdout once it listens. The transport answers 406 to a request whose
// Accept does not list both application/json and text/event-stream.
import { createRequire } from "node:module";
import http from "node:http";

// require, unlike import, finds the SDK through NODE_PATH.
const require = createRequire(import.meta.url);
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { z } = require("zod");

// newServer is one request's server: in stateless mode a transport serves
// one request only.
function newServer() {
  const server = new McpServer({ name: "sidecar-test", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echoes its text", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text: "echo: " + text }] }),
  );
  return server;
}

const httpServer = http.createServer(async (req, res) => {
  if (req.method !== "POST" || req.url !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  let body;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    res.writeHead(400).end();
    return;
  }
  const server = newServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
});

httpServer.listen(0, "127.0.0.1", () => process.stdout.write(httpServer.address().port + "\n"));
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => process.exit(0));
