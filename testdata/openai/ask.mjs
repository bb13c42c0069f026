// An agent's question through the OpenAI door, read by the openai npm
// client (proxy/openai's TestClientsQuestion):
//
//   node ask.mjs <base URL of the door of the asking method> <base URL of the door of the unary one>
//
// The question is the assistant's text, finish_reason stop, in chat
// completions (whole and streamed) and responses; the answer is the next
// user turn, sent with the ids the first answer gave. It prints one JSON
// line per step.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { default: OpenAI } = require("openai");

const [, , askURL, unaryURL] = process.argv;
const model = "agent";
const client = (base) => new OpenAI({ baseURL: base + "/v1", apiKey: "none", maxRetries: 0 });
const ask = client(askURL);
const unary = client(unaryURL);

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

const hi = [{ role: "user", content: "hi" }];
let asked;

await step("chat", async () => {
  const c = await ask.chat.completions.create({ model, messages: hi });
  asked = c;
  return { content: c.choices[0].message.content, finish: c.choices[0].finish_reason };
});

await step("chat stream", async () => {
  const stream = await ask.chat.completions.create({ model, messages: hi, stream: true });
  let content = "", finish = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    content += choice.delta?.content ?? "";
    finish = choice.finish_reason ?? finish;
  }
  return { content, finish };
});

await step("responses", async () => {
  const r = await ask.responses.create({ model, input: "hi" });
  const next = await ask.responses.create({ model, input: "savings", previous_response_id: r.id });
  return { text: r.output_text, status: r.status, next: next.output_text };
});

await step("chat answered", async () => {
  const c = await ask.chat.completions.create({
    model,
    messages: [...hi, { role: "assistant", content: asked.choices[0].message.content }, { role: "user", content: "savings" }],
  });
  return { content: c.choices[0].message.content };
});

await step("chat, a unary method", async () => {
  const c = await unary.chat.completions.create({ model, messages: hi });
  return { content: c.choices[0].message.content, finish: c.choices[0].finish_reason };
});
