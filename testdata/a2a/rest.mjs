// The A2A JavaScript SDK's HTTP+JSON (REST) client (@a2a-js/sdk, pinned
// in package.json) against the sidecar's A2A door: proxy/a2a's
// TestJSClientREST runs it with NODE_PATH set to the node_modules that
// install.sh prints.
//
//   node rest.mjs <base URL of a streaming agent> <base URL of a slow one>
//
// The slow agent answers one record and waits until its call ends. With
// each URL (a door on its own listener, or mounted: the URL then ends with
// the mount) the SDK talks to the agent three ways: built from the card
// with the REST transport alone (the card's HTTP+JSON 1.0 interface),
// forced onto the URL as a 1.0 REST client, and forced as a 0.3 one (the
// SDK's LegacyRestTransport: /v1/message:send, …). Each way it sends a
// message, streams one, gets the task, cancels it (ended: not cancelable),
// gets a task that does not exist, and against the slow agent cancels a
// running stream's task from another connection. It prints one JSON line
// per step, which the test compares; a step that throws prints its error.
import { client, compat, say, message, partsText, state } from "./common.mjs";

const { ClientFactory, Client, RestTransportFactory } = client;
const { LegacyRestTransport } = compat;

const [, , streamURL, slowURL] = process.argv;

async function step(name, f) {
  try {
    say({ step: name, ...(await f()) });
  } catch (e) {
    say({ step: name, error: e?.name ?? "Error", message: String(e?.message ?? e) });
  }
}

// clients are the three ways to the door at url.
async function clients(url) {
  const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json();
  const fromCard = await new ClientFactory({ transports: [new RestTransportFactory()] }).createFromAgentCard(card);
  const forced = new Client(await new RestTransportFactory().create(url, card), card);
  const legacy = new Client(new LegacyRestTransport({ endpoint: url }), card);
  return [
    ["card", fromCard],
    ["1.0", forced],
    ["0.3", legacy],
  ];
}

async function talk(label, client) {
  let taskId = "";
  await step(`${label} send`, async () => {
    const task = await client.sendMessage(message("hi"));
    taskId = task.id;
    return {
      state: state(task.status?.state),
      text: (task.artifacts ?? []).map((a) => partsText(a.parts)).join(""),
    };
  });
  await step(`${label} stream`, async () => {
    const events = [];
    let text = "";
    for await (const ev of client.sendMessageStream(message("hi"))) {
      const { $case, value } = ev.payload ?? {};
      if ($case === "artifactUpdate") {
        text += partsText(value.artifact?.parts);
        events.push($case);
      } else {
        events.push(`${$case} ${state(value.status?.state)}`);
      }
    }
    return { events, text };
  });
  await step(`${label} get`, async () => {
    const task = await client.getTask({ id: taskId, tenant: "" });
    return { state: state(task.status?.state), same: task.id === taskId };
  });
  await step(`${label} cancel ended`, async () => {
    const task = await client.cancelTask({ id: taskId, tenant: "" });
    return { state: state(task.status?.state) };
  });
  await step(`${label} get unknown`, async () => {
    const task = await client.getTask({ id: "no-such-task", tenant: "" });
    return { state: state(task.status?.state) };
  });
}

// cancelRunning streams a message to the slow agent, cancels its task
// from another connection once the stream has its first record, and reads
// the stream to its end.
async function cancelRunning(label, client) {
  await step(`${label} cancel running`, async () => {
    const events = [];
    let canceled = "";
    for await (const ev of client.sendMessageStream(message("hi"))) {
      const { $case, value } = ev.payload ?? {};
      events.push($case === "artifactUpdate" ? $case : `${$case} ${state(value.status?.state)}`);
      if ($case === "artifactUpdate") {
        const task = await client.cancelTask({ id: value.taskId, tenant: "" });
        canceled = state(task.status?.state);
      }
    }
    return { canceled, events };
  });
}

for (const [label, client] of await clients(streamURL)) {
  say({ step: label, binding: client.transport?.protocolName ?? "", version: client.protocolVersion });
  await talk(label, client);
}
for (const [label, client] of await clients(slowURL)) {
  await cancelRunning(label, client);
}
