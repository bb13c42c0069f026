// The A2A JavaScript SDK's client (@a2a-js/sdk, pinned in package.json)
// against the sidecar's A2A door: proxy/a2a's TestJSClient and
// cmd/sidecar's TestOnePort run it with NODE_PATH set to the node_modules
// that install.sh prints.
//
//   node client.mjs <base URL of a streaming agent> [<base URL of a failing one>]
//
// A base URL is where the door's JSON-RPC endpoint is: its listener's
// root, or its mount on the platform's listener (http://host:8080/a2a).
// With each URL it fetches the agent card (at <URL>/.well-known/agent-card.json,
// its whole URL given to the SDK), and talks to the agent twice:
// as an A2A 1.0 client (the SDK's default: the card's 1.0 JSON-RPC
// interface, A2A-Version: 1.0) and as an A2A 0.3 client (the SDK's 0.3
// JSON-RPC transport at the card's 0.3 url). Each way it sends a message
// (message/send, SendMessage) and streams one (message/stream,
// SendStreamingMessage), then asks for the task (tasks/get, GetTask) and to cancel it, ended
// (tasks/cancel, CancelTask: TaskNotCancelable). It
// prints one JSON line per step, which the test compares; a step that
// throws prints its error.
import { client, compat, say, message, partsText, state } from "./common.mjs";

const { ClientFactory, Client } = client;
const { LegacyJsonRpcTransport } = compat;

const [, , streamURL, failURL] = process.argv;

async function step(name, f) {
  try {
    say({ step: name, ...(await f()) });
  } catch (e) {
    say({ step: name, error: String(e?.message ?? e) });
  }
}

async function talk(label, url, client) {
  let taskId = "";
  await step(`${label} send`, async () => {
    const task = await client.sendMessage(message("hi"));
    taskId = task.id;
    return {
      state: state(task.status?.state),
      text: (task.artifacts ?? []).map((a) => partsText(a.parts)).join(""),
      message: partsText(task.status?.message?.parts),
    };
  });
  await step(`${label} stream`, async () => {
    const events = [];
    let text = "";
    let statusText = "";
    for await (const ev of client.sendMessageStream(message("hi"))) {
      const { $case, value } = ev.payload ?? {};
      if ($case === "artifactUpdate") {
        text += partsText(value.artifact?.parts);
        events.push($case);
      } else {
        events.push(`${$case} ${state(value.status?.state)}`);
        if (value.status?.message) statusText = partsText(value.status.message.parts);
      }
    }
    return { events, text, message: statusText };
  });
  await step(`${label} get`, async () => {
    const task = await client.getTask({ id: taskId, tenant: "" });
    return { state: state(task.status?.state), same: task.id === taskId };
  });
  // An ended task cannot be canceled: TaskNotCancelable, as the SDK
  // reads the door's error.
  await step(`${label} cancel`, async () => {
    const task = await client.cancelTask({ id: taskId, tenant: "" });
    return { state: state(task.status?.state) };
  });
}

for (const url of [streamURL, failURL].filter(Boolean)) {
  const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json();
  say({
    step: "card",
    name: card.name,
    streaming: card.capabilities?.streaming,
    interfaces: card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`),
  });
  // The card's whole URL, "" for the path: the SDK resolves a path
  // against the origin, which would drop a mount's path.
  const v1 = await new ClientFactory().createFromUrl(`${url}/.well-known/agent-card.json`, "");
  say({ step: "version", version: v1.protocolVersion });
  await talk("1.0", url, v1);
  const v03 = new Client(new LegacyJsonRpcTransport({ endpoint: card.url }), card);
  say({ step: "version", version: v03.protocolVersion });
  await talk("0.3", url, v03);
}
