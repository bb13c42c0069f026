// The A2A JavaScript SDK's clients (@a2a-js/sdk, pinned in package.json)
// sending and receiving parts that are not text through the sidecar's A2A
// door: proxy/a2a's TestJSClientParts runs it with NODE_PATH set to the
// node_modules that install.sh prints.
//
//   node parts.mjs <base URL of the door in front of parts.py's /echo>
//
// Four ways: JSON-RPC 1.0 (from the card), JSON-RPC 0.3 (the SDK's legacy
// transport), HTTP+JSON 1.0 and HTTP+JSON 0.3. Each way it sends one
// message of a text part, a file part of bytes (a PNG), a file part of a
// URI and a data part, then streams the same message, and prints what
// came back: the agent's text (what it got) and each other part of the
// artifact: its kind, media type, file name, and for bytes their length
// and whether they are the bytes it sent.
import { client, compat, say, state } from "./common.mjs";

const { ClientFactory, Client, RestTransportFactory } = client;
const { LegacyJsonRpcTransport, LegacyRestTransport } = compat;

const [, , url] = process.argv;

// png is a small PNG's bytes: its signature, then zeros.
const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(100)]);

function part(content, mediaType = "", filename = "") {
  return { content, filename, mediaType, metadata: undefined };
}

function request() {
  return {
    message: {
      messageId: crypto.randomUUID(),
      contextId: "",
      taskId: "",
      role: 1, // ROLE_USER
      parts: [
        part({ $case: "text", value: "what is this?" }),
        part({ $case: "raw", value: png }, "image/png", "a.png"),
        part({ $case: "url", value: "https://files.example/report.pdf" }, "application/pdf", "report.pdf"),
        part({ $case: "data", value: { total: 12.5 } }),
      ],
      extensions: [],
      referenceTaskIds: [],
    },
    tenant: "",
  };
}

// describe is one part of an answer, for the test to compare.
function describe(p) {
  const c = p.content ?? {};
  switch (c.$case) {
    case "text":
      return `text ${JSON.stringify(c.value)}`;
    case "raw": {
      const b = Buffer.from(c.value);
      const same = b.equals(png) ? " (the PNG sent)" : b.subarray(0, 4).equals(png.subarray(0, 4)) ? " (a PNG)" : "";
      return `raw ${p.mediaType} ${p.filename || "-"} ${b.length}${same}`;
    }
    case "url":
      return `url ${p.mediaType || "-"} ${p.filename || "-"} ${c.value}`;
    case "data":
      return `data ${JSON.stringify(c.value)}`;
  }
  return `? ${JSON.stringify(p)}`;
}

// joined is parts with consecutive text parts joined, as a streamed
// artifact's appends are.
function joined(parts) {
  const out = [];
  for (const p of parts) {
    const last = out[out.length - 1];
    if (p.content?.$case === "text" && last?.content?.$case === "text") {
      out[out.length - 1] = part({ $case: "text", value: last.content.value + p.content.value });
    } else {
      out.push(p);
    }
  }
  return out.map(describe);
}

async function step(name, f) {
  try {
    say({ step: name, ...(await f()) });
  } catch (e) {
    say({ step: name, error: String(e?.message ?? e) });
  }
}

const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json();
const ways = [
  ["JSON-RPC 1.0", await new ClientFactory().createFromUrl(`${url}/.well-known/agent-card.json`, "")],
  ["JSON-RPC 0.3", new Client(new LegacyJsonRpcTransport({ endpoint: card.url }), card)],
  ["HTTP+JSON 1.0", new Client(await new RestTransportFactory().create(url, card), card)],
  ["HTTP+JSON 0.3", new Client(new LegacyRestTransport({ endpoint: url }), card)],
];
for (const [label, c] of ways) {
  await step(`${label} send`, async () => {
    const task = await c.sendMessage(request());
    return { state: state(task.status?.state), parts: joined((task.artifacts ?? []).flatMap((a) => a.parts)) };
  });
  await step(`${label} stream`, async () => {
    const parts = [];
    let last = "";
    for await (const ev of c.sendMessageStream(request())) {
      const { $case, value } = ev.payload ?? {};
      if ($case === "artifactUpdate") parts.push(...(value.artifact?.parts ?? []));
      else last = state(value.status?.state);
    }
    return { state: last, parts: joined(parts) };
  });
}
