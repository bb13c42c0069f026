// The A2A JavaScript SDK's client (@a2a-js/sdk, pinned in package.json)
// through cmd/sidecar's TestReplicas' round-robin balancer, in front of
// three sidecars that share their tasks in Redis: every request lands on
// another replica than the last, so each step below reads or changes a
// task that another replica ran.
//
//   node replicas.mjs <the balancer's URL of the A2A door> <cancel key> <subscribe key>
//
// As an A2A 1.0 client (the card's JSON-RPC interface) it sends a message
// (SendMessage), streams one (SendStreamingMessage), gets the sent task
// (GetTask) and lists both (ListTasks). Then it streams "hold-<cancel
// key>" (the agent holds the stream after its first word), prints the
// step "cancel held" and waits for a line on stdin (the test steers the
// balancer off the replica running the task), cancels the task
// (CancelTask), reads the stream to its end and gets the task. Then it
// streams "hold-<subscribe key>", prints "subscribe held", waits for a
// line, subscribes to the task (SubscribeToTask) and prints the first
// event as "subscribed" (the test then releases the agent); it reads the
// subscription and the stream to their ends and gets the task. One JSON
// line per step; a step that throws prints its error.
import { createInterface } from "node:readline";
import { client, say, message, partsText, state } from "./common.mjs";

const { ClientFactory } = client;
const [, , url, cancelKey, subscribeKey] = process.argv;
const stdin = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

// proceed waits for the test's line on stdin.
async function proceed() {
  await stdin.next();
}

async function step(name, f) {
  try {
    say({ step: name, ...(await f()) });
  } catch (e) {
    say({ step: name, error: String(e?.message ?? e) });
  }
}

// describe is an event as the test reads it.
function describe(ev) {
  const { $case, value } = ev?.payload ?? {};
  if ($case === "task") {
    return `task ${state(value.status?.state)} ${(value.artifacts ?? []).map((a) => partsText(a.parts)).join("")}`;
  }
  if ($case === "artifactUpdate") {
    return `artifactUpdate ${partsText(value.artifact?.parts)}`;
  }
  return `${$case} ${state(value?.status?.state)}`;
}

// textOf is a task's artifacts' text.
function textOf(task) {
  return (task.artifacts ?? []).map((a) => partsText(a.parts)).join("");
}

// held streams text and reads it to its first part: the stream, its
// task's id and the events read.
async function held(text) {
  const stream = c.sendMessageStream(message(text));
  const events = [];
  let id = "";
  for (;;) {
    const { value: ev, done } = await stream.next();
    if (done) break;
    events.push(describe(ev));
    const { $case, value } = ev.payload ?? {};
    if ($case === "task") id = value.id;
    if ($case === "artifactUpdate") break;
  }
  return { stream, id, events };
}

// rest reads a stream to its end.
async function rest(stream) {
  const events = [];
  for await (const ev of stream) events.push(describe(ev));
  return events;
}

const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json();
say({ step: "card", url: card.url });
// The card's whole URL: given a base, the SDK reads the host's root, not
// a mounted door's.
const c = await new ClientFactory().createFromUrl(`${url}/.well-known/agent-card.json`, "");

let sentId = "";
let streamedId = "";
await step("send", async () => {
  const task = await c.sendMessage(message("hi"));
  sentId = task.id;
  return { state: state(task.status?.state), text: textOf(task) };
});
await step("stream", async () => {
  const events = [];
  for await (const ev of c.sendMessageStream(message("hi"))) {
    events.push(describe(ev));
    if (ev.payload?.$case === "task") streamedId = ev.payload.value.id;
  }
  return { events };
});
await step("get", async () => {
  const task = await c.getTask({ id: sentId, tenant: "" });
  return { state: state(task.status?.state), same: task.id === sentId, text: textOf(task) };
});
await step("list", async () => {
  const list = await c.listTasks({ tenant: "", contextId: "", status: 0, pageToken: "", pageSize: 100, includeArtifacts: true });
  const find = (id) => {
    const t = list.tasks.find((t) => t.id === id);
    return t ? `${state(t.status?.state)} ${textOf(t)}` : "missing";
  };
  return { sent: find(sentId), streamed: find(streamedId) };
});

{
  const { stream, id, events } = await held(`hold-${cancelKey}`);
  say({ step: "cancel held", events });
  await proceed();
  await step("cancel", async () => {
    const task = await c.cancelTask({ id, tenant: "" });
    return { state: state(task.status?.state), same: task.id === id };
  });
  await step("cancel stream", async () => ({ events: await rest(stream) }));
  await step("cancel get", async () => {
    const task = await c.getTask({ id, tenant: "" });
    return { state: state(task.status?.state) };
  });
}

{
  const { stream, id, events } = await held(`hold-${subscribeKey}`);
  say({ step: "subscribe held", events });
  await proceed();
  const sub = c.resubscribeTask({ id, tenant: "" });
  await step("subscribed", async () => ({ first: describe((await sub.next()).value) }));
  await step("subscription", async () => ({ events: await rest(sub) }));
  await step("subscribe stream", async () => ({ events: await rest(stream) }));
  await step("subscribe get", async () => {
    const task = await c.getTask({ id, tenant: "" });
    return { state: state(task.status?.state), text: textOf(task) };
  });
}
process.exit(0);
