// The openai npm client sends images, audio and files through the door
// and reads the agent's parts back. proxy/openai's TestClientParts runs it
// with NODE_PATH set to the node_modules that install.sh prints:
//
//   node parts.mjs <base URL>
//
// The door at <base URL>/v1 serves the model "agent" in front of
// agent.py's /echo_parts, which answers "got <n> parts" and then each part
// of its input as it came. It prints one JSON line per step, which the
// test compares; a step that throws prints its error's class, status and
// message.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { default: OpenAI } = require("openai");

const [, , baseURL] = process.argv;
const model = "agent";
const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey: "none", maxRetries: 0 });

// A 1x1 PNG, the head of a WAV file and a small PDF: the bytes sent.
const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");
const wav = Buffer.concat([Buffer.from("RIFF\x24\x00\x00\x00WAVEfmt ", "latin1"), Buffer.alloc(60)]);
const pdf = Buffer.from("%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n");
const dataURL = (type, b) => `data:${type};base64,${b.toString("base64")}`;

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

const messages = [{ role: "user", content: [
  { type: "text", text: "look" },
  { type: "image_url", image_url: { url: dataURL("image/png", png), detail: "low" } },
  { type: "input_audio", input_audio: { data: wav.toString("base64"), format: "wav" } },
] }];
// What chat's content says of the parts echoed: Markdown of their data URLs.
const chatParts = `![image/png](${dataURL("image/png", png)})[audio/wav](${dataURL("audio/wav", wav)})`;

await step("chat, an image and audio", async () => {
  const c = await client.chat.completions.create({ model, messages });
  const content = c.choices[0].message.content;
  return { head: content.slice(0, 11), parts: content.slice(11) === chatParts };
});

await step("chat stream, an image and audio", async () => {
  const stream = await client.chat.completions.create({ model, messages, stream: true });
  let content = "";
  for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? "";
  return { head: content.slice(0, 11), parts: content.slice(11) === chatParts };
});

const input = [{ role: "user", content: [
  { type: "input_text", text: "look" },
  { type: "input_image", image_url: dataURL("image/png", png), detail: "auto" },
  { type: "input_file", filename: "r.pdf", file_data: dataURL("application/pdf", pdf) },
] }];

// images are the decoded bytes of a response's image_generation_call
// items, compared with the PNG sent.
function read(r) {
  const images = r.output.filter((o) => o.type === "image_generation_call");
  return {
    status: r.status,
    types: r.output.map((o) => o.type),
    text: r.output_text.replace(/base64,[^)]*/, "base64,…"),
    pdf: r.output_text.includes(dataURL("application/pdf", pdf)),
    image: images.length === 1 && Buffer.from(images[0].result, "base64").equals(png),
  };
}

await step("responses, an image and a file", async () => read(await client.responses.create({ model, input })));

await step("responses stream, an image and a file", async () => {
  const stream = client.responses.stream({ model, input });
  const types = [];
  let image = null;
  for await (const event of stream) {
    if (!types.includes(event.type)) types.push(event.type);
    if (event.type === "response.output_item.done" && event.item.type === "image_generation_call") image = event.item.result;
  }
  const r = await stream.finalResponse();
  return { events: types.filter((t) => t.includes("image") || t.startsWith("response.output_item")),
    streamed: image !== null && Buffer.from(image, "base64").equals(png), ...read(r) };
});
