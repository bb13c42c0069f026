// The MCP TypeScript client 2.x with its OAuth client credentials provider
// (ClientCredentialsProvider) against the sidecar's protected MCP door, for
// cmd/sidecar's TestOAuthClients. Usage:
//   NODE_PATH=<node_modules> node oauth.mjs <endpoint URL> <issuer> <client id> <client secret> <scope> [auto]
// auto: the 2026-07-28 revision (server/discover first), else the client's
// default (initialize, a 2025-11-25 session).
// The steps and their lines: ../oidc/mcpflow.mjs.
import { createRequire } from "node:module";
import { run } from "../oidc/mcpflow.mjs";

// require, unlike import, finds the client through NODE_PATH.
const require = createRequire(import.meta.url);
const { Client, StreamableHTTPClientTransport, ClientCredentialsProvider } = require("@modelcontextprotocol/client");

const args = process.argv.slice(2);
const options = args[5] === "auto" ? { versionNegotiation: { mode: "auto" } } : {};
await run({ Client, StreamableHTTPClientTransport, ClientCredentialsProvider }, args.slice(0, 5), options);
