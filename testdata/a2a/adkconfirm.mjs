// The A2A JavaScript SDK's clients (@a2a-js/sdk, pinned in package.json)
// answering an ADK agent's tool confirmation through the sidecar's A2A
// door, in front of the TypeScript ADK api server (cmd/sidecar's
// TestADKTypeScript, "questions answered through A2A"):
//
//   node adkconfirm.mjs <base URL of the door>
//
// Two ways (JSON-RPC as A2A 1.0 and 0.3): the client sends "approve
// <amount>" (the task comes back input-required, the confirmation's
// question its status message), then answers it with a data part
// {"confirmed": true} (the task completes with the transfer made). One
// JSON line per step; a step that throws prints its error.
import { client, compat, say, message, partsText, state } from "./common.mjs";

const { ClientFactory, Client } = client;
const { LegacyJsonRpcTransport } = compat;

const url = process.argv[2];

async function step(name, f) {
  try {
    say({ step: name, ...(await f()) });
  } catch (e) {
    say({ step: name, error: e?.name ?? "Error", message: String(e?.message ?? e) });
  }
}

// confirm is a message answering task with the data part {confirmed}.
function confirm(task, confirmed) {
  const m = message("");
  m.message.taskId = task.id;
  m.message.contextId = task.contextId;
  m.message.parts = [{ content: { $case: "data", value: { confirmed } }, filename: "", mediaType: "application/json" }];
  return m;
}

// describe is a task as the test reads it: its state, the question's
// kind and schema, the artifact's last part.
function describe(task) {
  const m = task.status?.message;
  const data = (m?.parts ?? []).find((p) => p.content?.$case === "data")?.content.value;
  const parts = (task.artifacts ?? []).flatMap((a) => a.parts ?? []);
  return {
    state: state(task.status?.state),
    kind: data?.kind,
    schema: data?.schema ? Object.keys(data.schema.properties ?? {}) : undefined,
    last: parts.length ? partsText(parts.slice(-1)) : undefined,
  };
}

const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json();
const ways = {
  "JSONRPC 1.0": await new ClientFactory().createFromUrl(`${url}/.well-known/agent-card.json`, ""),
  "JSONRPC 0.3": new Client(new LegacyJsonRpcTransport({ endpoint: card.url }), card),
};
let amount = 20;
for (const [way, c] of Object.entries(ways)) {
  let task;
  amount++;
  await step(`${way} ask`, async () => {
    task = await c.sendMessage(message(`approve ${amount}`));
    return describe(task);
  });
  await step(`${way} answer`, async () => describe(await c.sendMessage(confirm(task, true))));
}
process.exit(0);
