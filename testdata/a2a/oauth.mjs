// The A2A JavaScript SDK's client (@a2a-js/sdk) against the sidecar's
// protected A2A door, its token from the authorization server the card
// names, for cmd/sidecar's TestOAuthClients. Usage:
//   NODE_PATH=<node_modules> node oauth.mjs <base URL> <client id> <client secret> <resource>
//
// It reads the card (public), finds the authorization server in its oidc
// security scheme (openIdConnectUrl: the server's discovery document),
// then: a client without a token sends a message (the SDK's error); a
// client whose fetch is the SDK's createAuthenticatingFetchWithRetry, with
// a handler that on a 401 gets a token (client credentials,
// client_secret_post, for <resource>: RFC 8707) and retries, sends a
// message, streams one and gets the task. One JSON line per step; a step
// that throws prints its error.
import { client, say, message, partsText, state } from "./common.mjs";

const { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory, createAuthenticatingFetchWithRetry } = client;
const [, , base, clientId, clientSecret, resource] = process.argv;
const cardURL = `${base}/.well-known/agent-card.json`;

async function step(name, f) {
  try {
    say({ step: name, ...(await f()) });
  } catch (e) {
    say({ step: name, error: String(e?.message ?? e) });
  }
}

const card = await (await fetch(cardURL)).json();
const discovery = card.securitySchemes?.oidc?.openIdConnectSecurityScheme?.openIdConnectUrl ?? card.securitySchemes?.oidc?.openIdConnectUrl;
say({ step: "card", schemes: Object.keys(card.securitySchemes ?? {}).sort(), discovery });

await step("no token", async () => {
  const plain = await new ClientFactory().createFromUrl(cardURL, "");
  const task = await plain.sendMessage(message("hi"));
  return { state: state(task.status?.state) };
});

let tokens = 0;
async function token() {
  const { token_endpoint: endpoint } = await (await fetch(discovery)).json();
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret, resource }),
  });
  const body = await res.json();
  if (!res.ok) throw new Error(`token endpoint ${res.status}: ${JSON.stringify(body)}`);
  tokens++;
  return body.access_token;
}

// The SDK's authentication hook: no header at first; on a 401 it gets a
// token and the SDK retries with it, then keeps it for the next calls.
let header = {};
let challenged = 0;
const fetchImpl = createAuthenticatingFetchWithRetry(fetch, {
  headers: async () => header,
  shouldRetryWithHeaders: async (_req, res) => {
    if (res.status !== 401) return undefined;
    challenged++;
    return { Authorization: `Bearer ${await token()}` };
  },
  onSuccessfulRetry: async (h) => {
    header = h;
  },
});
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
}));
const authed = await factory.createFromUrl(cardURL, "");

let taskId = "";
await step("send", async () => {
  const task = await authed.sendMessage(message("hi"));
  taskId = task.id;
  return { state: state(task.status?.state), text: (task.artifacts ?? []).map((a) => partsText(a.parts)).join("") };
});
await step("stream", async () => {
  let text = "";
  for await (const ev of authed.sendMessageStream(message("there"))) {
    if (ev.payload?.$case === "artifactUpdate") text += partsText(ev.payload.value.artifact?.parts);
  }
  return { text };
});
await step("get", async () => {
  const task = await authed.getTask({ id: taskId, tenant: "" });
  return { state: state(task.status?.state), same: task.id === taskId };
});
say({ step: "auth", challenged, tokens });
