// The MCP TypeScript SDK 1.x client with the SDK's OAuth client credentials
// provider (ClientCredentialsProvider) against the sidecar's protected MCP
// door, for cmd/sidecar's TestOAuthClients. Usage:
//   NODE_PATH=<node_modules> node oauth.mjs <endpoint URL> <issuer> <client id> <client secret> <scope>
// The steps and their lines: ../oidc/mcpflow.mjs.
import { createRequire } from "node:module";
import { run } from "../oidc/mcpflow.mjs";

// require, unlike import, finds the SDK through NODE_PATH.
const require = createRequire(import.meta.url);
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ClientCredentialsProvider } = require("@modelcontextprotocol/sdk/client/auth-extensions.js");

await run({ Client, StreamableHTTPClientTransport, ClientCredentialsProvider }, process.argv.slice(2));
