// The A2A JavaScript SDK's clients (@a2a-js/sdk, pinned in package.json)
// answering an agent's question through the sidecar's A2A door:
// proxy/a2a's TestJSClientAsk runs it with NODE_PATH set to the
// node_modules that install.sh prints.
//
//   node ask.mjs <base URL of the door> [<another replica's> <a third's>]
//
// The agent asks "Approve the transfer?" (a form whose schema wants
// {"approve": <boolean>}) on the first call, and says what it got once
// it is answered. Four ways (JSON-RPC and HTTP+JSON, each as A2A 1.0 and
// 0.3), the client sends a message (the task comes back input-required,
// the question its status message), answers it with content that fails
// the schema (refused: invalid params), gets the task (still waiting),
// answers it (a message naming the task, a text part and a data part:
// the task completes), then does the same streaming. Given three URLs
// (replicas sharing their tasks in Redis), the steps go round them, so
// each answer lands on another replica than the question. One JSON line
// per step; a step that throws prints its error.
import { client, compat, say, message, partsText, state } from "./common.mjs";

const { ClientFactory, Client, RestTransportFactory } = client;
const { LegacyJsonRpcTransport, LegacyRestTransport } = compat;

const urls = process.argv.slice(2);

async function step(name, f) {
  try {
    say({ step: name, ...(await f()) });
  } catch (e) {
    say({ step: name, error: e?.name ?? "Error", message: String(e?.message ?? e) });
  }
}

// answer is a message answering task id with parts: strings are text
// parts, objects data parts.
function answer(task, parts) {
  const m = message("");
  m.message.taskId = task.id;
  m.message.contextId = task.contextId;
  m.message.parts = parts.map((p) =>
    typeof p === "string"
      ? { content: { $case: "text", value: p }, filename: "", mediaType: "" }
      : { content: { $case: "data", value: p }, filename: "", mediaType: "application/json" },
  );
  return m;
}

// clients are the four ways to the door at url.
async function clients(url) {
  const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json();
  return {
    "JSONRPC 1.0": await new ClientFactory().createFromUrl(`${url}/.well-known/agent-card.json`, ""),
    "HTTP+JSON 1.0": new Client(await new RestTransportFactory().create(url, card), card),
    "JSONRPC 0.3": new Client(new LegacyJsonRpcTransport({ endpoint: card.url }), card),
    "HTTP+JSON 0.3": new Client(new LegacyRestTransport({ endpoint: url }), card),
  };
}

// describe is a task as the test reads it.
function describe(task) {
  const m = task.status?.message;
  const data = (m?.parts ?? []).find((p) => p.content?.$case === "data")?.content.value;
  return {
    state: state(task.status?.state),
    asks: partsText((m?.parts ?? []).filter((p) => p.content?.$case === "text")),
    kind: data?.kind,
    schema: data?.schema ? Object.keys(data.schema.properties ?? {}) : undefined,
    text: (task.artifacts ?? []).map((a) => partsText(a.parts)).join(""),
    history: (task.history ?? []).map((h) => (h.role === 2 ? "agent" : "user")),
  };
}

// event is a stream's event as the test reads it.
function event(ev) {
  const { $case, value } = ev.payload ?? {};
  if ($case === "artifactUpdate") return `artifactUpdate ${partsText(value.artifact?.parts)}`;
  return `${$case} ${state(value.status?.state)}`;
}

const ways = await Promise.all(urls.map(clients));
const on = (i, way) => ways[i % ways.length][way];

for (const way of ["JSONRPC 1.0", "HTTP+JSON 1.0", "JSONRPC 0.3", "HTTP+JSON 0.3"]) {
  let task;
  await step(`${way} ask`, async () => {
    task = await on(0, way).sendMessage(message("pay bob"));
    return describe(task);
  });
  await step(`${way} bad answer`, async () => {
    const t = await on(1, way).sendMessage(answer(task, [{ approve: "yes" }]));
    return describe(t);
  });
  await step(`${way} get`, async () => describe(await on(2, way).getTask({ id: task.id, tenant: "" })));
  await step(`${way} answer`, async () => describe(await on(1, way).sendMessage(answer(task, ["go ahead", { approve: true }]))));
  await step(`${way} stream`, async () => {
    const events = [];
    task = undefined;
    for await (const ev of on(2, way).sendMessageStream(message("pay alice"))) {
      events.push(event(ev));
      if (ev.payload?.$case === "task") task = ev.payload.value;
    }
    return { events };
  });
  await step(`${way} stream answer`, async () => {
    const events = [];
    for await (const ev of on(0, way).sendMessageStream(answer(task, [{ approve: false }]))) events.push(event(ev));
    return { events };
  });
}
process.exit(0);
