// A real OAuth 2.0 authorization server, oidc-provider (pinned in
// package.json), on 127.0.0.1, issuing cmd/sidecar's TestOAuthClients
// their tokens. Usage:
//   NODE_PATH=<node_modules> node provider.mjs '<config JSON>'
// config: {"resources": [<resource URL>...], "clients": [{"id", "secret",
//   "auth": "client_secret_basic" | "client_secret_post", "scope": "<scopes
//   the client may get>", "alg": "<its tokens' JWS algorithm: RS256 (the
//   default), PS256, ES256 or EdDSA>"}...], "defaultResource": <the
//   resource of a request that names none, as an AS's default audience;
//   optional>}
//
// It serves OIDC discovery, its key set and the token endpoint's client
// credentials grant (RFC 6749 §4.4) with resource indicators (RFC 8707):
// a token request names one of the resources, and gets a JWT access token
// (RFC 9068: typ at+jwt, signed with the client's alg, aud the resource,
// sub and client_id the client, scope the requested scopes the client may
// have). Any other resource is refused invalid_target; a request naming
// none is for the defaultResource, or without one gets an opaque token. Keys are made at start: it needs no
// network but loopback.
//
// Once listening it prints its issuer URL, one line, on stdout. It stops
// on SIGTERM, SIGINT, or its stdin closing when that is a pipe (its parent
// went away).
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { generateKeyPairSync } from "node:crypto";
import { createServer } from "node:http";
import { fstatSync } from "node:fs";

// require.resolve, unlike import, finds the package through NODE_PATH;
// oidc-provider is an ES module, so it is imported from the path found.
const require = createRequire(import.meta.url);
const { default: Provider, errors } = await import(pathToFileURL(require.resolve("oidc-provider")).href);

const config = JSON.parse(process.argv[2] ?? "{}");
const resources = new Set(config.resources ?? []);
const clients = new Map((config.clients ?? []).map((c) => [c.id, c]));

function signingKey(kid, type, options) {
  const jwk = generateKeyPairSync(type, options).privateKey.export({ format: "jwk" });
  return { ...jwk, kid, use: "sig" };
}

const server = createServer();
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [...clients.values()].map((c) => ({
    client_id: c.id,
    client_secret: c.secret,
    token_endpoint_auth_method: c.auth ?? "client_secret_basic",
    grant_types: ["client_credentials"],
    redirect_uris: [],
    response_types: [],
  })),
  jwks: {
    keys: [
      signingKey("rs1", "rsa", { modulusLength: 2048 }),
      signingKey("ec1", "ec", { namedCurve: "P-256" }),
      signingKey("ed1", "ed25519"),
    ],
  },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // No resource named: the default, else an opaque token, which no
      // resource server here takes.
      defaultResource: () => config.defaultResource,
      useGrantedResource: () => true,
      getResourceServerInfo(ctx, resource, client) {
        if (!resources.has(resource)) {
          throw new errors.InvalidTarget(`unknown resource ${resource}`);
        }
        return {
          audience: resource,
          scope: clients.get(client.clientId)?.scope ?? "",
          accessTokenFormat: "jwt",
          accessTokenTTL: 600,
          jwt: { sign: { alg: clients.get(client.clientId)?.alg ?? "RS256" } },
        };
      },
    },
  },
});
server.on("request", provider.callback());

function stop() {
  server.close();
  server.closeAllConnections();
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
if (fstatSync(0).isFIFO()) {
  process.stdin.on("end", stop);
  process.stdin.resume();
}
console.log(issuer);
