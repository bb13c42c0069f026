// The door's real clients against the sidecar: the openai npm client and
// the Vercel AI SDK's OpenAI-compatible provider (versions pinned in
// package.json). proxy/openai's TestClients and cmd/sidecar's TestOnePort
// run it with NODE_PATH set to the node_modules that install.sh prints:
//
//   node client.mjs <base URL> [<base URL of a failing agent> <base URL of a door with api_key "sekret">]
//
// Each base URL is where the door's /v1 is (the clients get <base>/v1):
// its listener's root, or a path before it (a passthrough's). The door
// serves the model "agent". Without the second and third URLs the steps
// that need them are left out (one sidecar serves one OpenAI door). It
// prints one JSON line per step, which the test compares; a step that
// throws prints its error's class, status and message.
import { createRequire } from "node:module";

// require, unlike import, finds the packages through NODE_PATH.
const require = createRequire(import.meta.url);
const { default: OpenAI } = require("openai");
const { createOpenAICompatible } = require("@ai-sdk/openai-compatible");
const { generateText, streamText } = require("ai");

const [, , okURL, failURL, keyedURL] = process.argv;
const model = "agent";
const messages = [{ role: "system", content: "be brief" }, { role: "user", content: "hi" }];

function say(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

async function step(name, f) {
  if (f === null) return;
  try {
    say({ step: name, ...(await f()) });
  } catch (e) {
    say({ step: name, threw: e.constructor.name, status: e.status ?? null, message: e.message });
  }
}

const client = (base, apiKey = "none") => new OpenAI({ baseURL: base + "/v1", apiKey, maxRetries: 0 });
const ok = client(okURL);
const fail = failURL && client(failURL);
// when(url, f) is f, or null (the step is left out) without url.
const when = (url, f) => (url ? f : null);

await step("models.list", async () => {
  const ids = [];
  for await (const m of ok.models.list()) ids.push(`${m.id} ${m.object} ${m.owned_by}`);
  return { ids };
});

await step("chat", async () => {
  const c = await ok.chat.completions.create({ model, messages });
  const choice = c.choices[0];
  return { object: c.object, model: c.model, role: choice.message.role, content: choice.message.content,
    reasoning: choice.message.reasoning_content, finish: choice.finish_reason, id: c.id.startsWith("chatcmpl-") };
});

await step("chat stream", async () => {
  const stream = await ok.chat.completions.create({ model, messages, stream: true });
  let content = "", reasoning = "", role = null, finish = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    const choice = chunk.choices[0];
    role ??= choice.delta.role ?? null;
    content += choice.delta.content ?? "";
    reasoning += choice.delta.reasoning_content ?? "";
    finish = choice.finish_reason ?? finish;
  }
  return { role, content, reasoning, finish, chunks };
});

await step("chat stream, include_usage", async () => {
  const stream = await ok.chat.completions.create({ model, messages, stream: true, stream_options: { include_usage: true } });
  let content = "", usage = null, empty = 0;
  for await (const chunk of stream) {
    if (chunk.choices.length === 0) empty++;
    content += chunk.choices[0]?.delta.content ?? "";
    usage = chunk.usage ?? usage;
  }
  return { content, usage, empty };
});

await step("chat stream, agent fails", when(failURL, async () => {
  const stream = await fail.chat.completions.create({ model, messages, stream: true });
  let content = "";
  try {
    for await (const chunk of stream) content += chunk.choices[0].delta.content ?? "";
  } catch (e) {
    return { content, threw: e.constructor.name, message: e.message };
  }
  return { content, threw: null };
}));

await step("responses", async () => {
  const r = await ok.responses.create({ model, input: "hi" });
  return { object: r.object, status: r.status, text: r.output_text };
});

await step("responses stream", async () => {
  const stream = await ok.responses.create({ model, input: [{ role: "user", content: "hi" }], stream: true });
  const types = [];
  let text = "", seq = -1, ordered = true;
  for await (const event of stream) {
    if (!types.includes(event.type)) types.push(event.type);
    ordered &&= event.sequence_number === seq + 1;
    seq = event.sequence_number;
    if (event.type === "response.output_text.delta") text += event.delta;
  }
  return { types, text, ordered };
});

await step("responses.stream helper", async () => {
  const r = await ok.responses.stream({ model, input: "hi" }).finalResponse();
  return { status: r.status, text: r.output_text };
});

await step("responses stream, agent fails", when(failURL, async () => {
  const stream = await fail.responses.create({ model, input: "hi", stream: true });
  let text = "", last = null;
  for await (const event of stream) {
    if (event.type === "response.output_text.delta") text += event.delta;
    last = event;
  }
  return { text, last: last.type, status: last.response.status, error: last.response.error.message };
}));

await step("wrong key", when(keyedURL, async () => {
  await client(keyedURL, "wrong").chat.completions.create({ model, messages });
  return { threw: null };
}));

await step("right key", when(keyedURL, async () => {
  const c = await client(keyedURL, "sekret").chat.completions.create({ model, messages });
  return { content: c.choices[0].message.content };
}));

await step("unknown model", async () => {
  await ok.chat.completions.create({ model: "gpt-4o", messages });
  return { threw: null };
});

const provider = (base) => createOpenAICompatible({ name: "sidecar", baseURL: base + "/v1", apiKey: "none" });

await step("ai generateText", async () => {
  const r = await generateText({ model: provider(okURL)(model), messages, maxRetries: 0 });
  return { text: r.text, reasoning: r.reasoningText ?? null, finish: r.finishReason };
});

await step("ai streamText", async () => {
  const r = streamText({ model: provider(okURL)(model), messages, maxRetries: 0 });
  const deltas = [];
  for await (const d of r.textStream) deltas.push(d);
  return { deltas, reasoning: (await r.reasoningText) ?? null, finish: await r.finishReason };
});

await step("ai streamText, agent fails", when(failURL, async () => {
  let error = null;
  const r = streamText({ model: provider(failURL)(model), messages, maxRetries: 0, onError: ({ error: e }) => { error = e; } });
  let text = "";
  for await (const d of r.textStream) text += d;
  return { text, error: error?.message ?? (typeof error === "string" ? error : JSON.stringify(error)) };
}));
