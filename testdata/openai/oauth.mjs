// The openai npm client against the sidecar's protected OpenAI door, with
// an access token of a real authorization server as its apiKey (sent as
// Authorization: Bearer), for cmd/sidecar's TestOAuthClients. Usage:
//   NODE_PATH=<node_modules> node oauth.mjs <base URL> <issuer> <client id> <client secret> <resource> <other resource>
//
// It discovers the server's token endpoint (<issuer>/.well-known/openid-configuration),
// gets a token for <resource> (client credentials, client_secret_basic,
// RFC 8707's resource), then: one chat completion and one stream with it;
// the same completion with a token for <other resource> (the client's
// error: the door must refuse a token for another audience). One JSON
// line per step; a step that throws prints its error's class, status and
// message.
import { createRequire } from "node:module";

// require, unlike import, finds the client through NODE_PATH.
const require = createRequire(import.meta.url);
const { default: OpenAI } = require("openai");

const [, , base, issuer, clientId, clientSecret, resource, other] = process.argv;
const messages = [{ role: "user", content: "hi" }];

function say(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

async function step(name, f) {
  try {
    say({ step: name, ...(await f()) });
  } catch (e) {
    say({ step: name, threw: e.constructor.name, status: e.status ?? null, message: e.message });
  }
}

const { token_endpoint: endpoint } = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
async function token(forResource) {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
      Authorization: "Basic " + Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString("base64"),
    },
    body: new URLSearchParams({ grant_type: "client_credentials", resource: forResource }),
  });
  const body = await res.json();
  if (!res.ok) throw new Error(`token endpoint ${res.status}: ${JSON.stringify(body)}`);
  return body.access_token;
}

const client = (apiKey) => new OpenAI({ baseURL: base + "/v1", apiKey, maxRetries: 0 });
const ok = client(await token(resource));
await step("chat", async () => {
  const r = await ok.chat.completions.create({ model: "agent", messages });
  return { object: r.object, content: r.choices[0].message.content, finish: r.choices[0].finish_reason };
});
await step("chat stream", async () => {
  let content = "";
  let chunks = 0;
  for await (const c of await ok.chat.completions.create({ model: "agent", messages, stream: true })) {
    chunks++;
    content += c.choices[0]?.delta?.content ?? "";
  }
  return { content, chunks };
});
await step("other resource", async () => {
  const r = await client(await token(other)).chat.completions.create({ model: "agent", messages });
  return { object: r.object };
});
