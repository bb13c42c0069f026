// The A2A JavaScript SDK's client (@a2a-js/sdk, pinned in package.json)
// against the sidecar's A2A door, for the task operations: proxy/a2a's
// TestJSClientOps runs it with NODE_PATH set to the node_modules that
// install.sh prints.
//
//   node ops.mjs <base URL of a gated streaming agent's door>
//
// As an A2A 1.0 client (the card's 1.0 JSON-RPC interface) and as a 0.3
// one (the SDK's 0.3 JSON-RPC transport), it streams a message until its
// first part, subscribes to its task from another request
// (resubscribeTask: SubscribeToTask, tasks/resubscribe) and prints the
// first event; the test then lets the agent go on, and it prints what the
// subscription saw to its end, subscribes to the ended task, and lists
// the tasks (listTasks: ListTasks; 0.3 has none); then all of it again
// over the HTTP+JSON binding, 1.0 and 0.3. One JSON line per step;
// a step that throws prints its error.
import { client, compat, say, message, partsText, state } from "./common.mjs";

const { ClientFactory, Client, RestTransportFactory } = client;
const { LegacyJsonRpcTransport, LegacyRestTransport } = compat;

const [, , url] = process.argv;

// describe is an event as the test reads it.
function describe(ev) {
  const { $case, value } = ev.payload ?? {};
  if ($case === "task") {
    return `task ${state(value.status?.state)} ${(value.artifacts ?? []).map((a) => partsText(a.parts)).join("")}`;
  }
  if ($case === "artifactUpdate") {
    return `artifactUpdate ${partsText(value.artifact?.parts)}${value.append ? " append" : ""}`;
  }
  return `${$case} ${state(value?.status?.state)}`;
}

async function step(name, f) {
  try {
    say({ step: name, ...(await f()) });
  } catch (e) {
    say({ step: name, error: String(e?.message ?? e) });
  }
}

async function talk(label, client) {
  // The message's own stream stays open (a caller that leaves ends its
  // task): read to its first part, and to its end after.
  const stream = client.sendMessageStream(message("hi"));
  let taskId = "";
  for (;;) {
    const { value: ev, done } = await stream.next();
    if (done) break;
    const { $case, value } = ev.payload ?? {};
    if ($case === "task") taskId = value.id;
    if ($case === "artifactUpdate") break;
  }
  const sub = client.resubscribeTask({ id: taskId, tenant: "" });
  const first = await sub.next();
  // The test reads this line, then lets the agent go on.
  say({ step: `${label} subscribed`, first: describe(first.value) });
  await step(`${label} subscription`, async () => {
    const events = [];
    for await (const ev of sub) events.push(describe(ev));
    return { events };
  });
  for (;;) {
    if ((await stream.next()).done) break;
  }
  await step(`${label} subscribe ended`, async () => {
    const events = [];
    for await (const ev of client.resubscribeTask({ id: taskId, tenant: "" })) events.push(describe(ev));
    return { events };
  });
  await step(`${label} list`, async () => {
    const list = await client.listTasks({ tenant: "", contextId: "", status: 0, pageToken: "", pageSize: 10, includeArtifacts: true });
    return {
      tasks: list.tasks.map((t) => `${t.id === taskId ? "this" : "other"} ${state(t.status?.state)} ${(t.artifacts ?? []).map((a) => partsText(a.parts)).join("")}`),
      next: list.nextPageToken,
      total: list.totalSize,
    };
  });
}

// The card's whole URL: given a base, the SDK reads the host's root, not
// a mounted door's.
const v1 = await new ClientFactory().createFromUrl(`${url}/.well-known/agent-card.json`, "");
await talk("1.0", v1);
const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json();
await talk("0.3", new Client(new LegacyJsonRpcTransport({ endpoint: card.url }), card));
// The same over the HTTP+JSON binding: the card's 1.0 interface of it,
// and the SDK's 0.3 REST transport.
await talk("1.0 REST", await new ClientFactory({ transports: [new RestTransportFactory()] }).createFromAgentCard(card));
await talk("0.3 REST", new Client(new LegacyRestTransport({ endpoint: url }), card));
