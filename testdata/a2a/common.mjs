// What the A2A client scripts (client.mjs, rest.mjs, ops.mjs) share: the
// SDK, found through NODE_PATH, and the helpers that write their steps
// as the Go tests read them.
import { createRequire } from "node:module";

// require, unlike import, finds the SDK through NODE_PATH.
const require = createRequire(import.meta.url);
export const client = require("@a2a-js/sdk/client");
export const compat = require("@a2a-js/sdk/compat/v0_3/client");
const { Role, TaskState } = require("@a2a-js/sdk");

// say prints one step: a JSON line.
export function say(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

// message is a user message of text, as the SDK's clients send it.
export function message(text) {
  return {
    message: {
      messageId: crypto.randomUUID(),
      contextId: "",
      taskId: "",
      role: Role.ROLE_USER,
      parts: [{ content: { $case: "text", value: text }, filename: "", mediaType: "" }],
      extensions: [],
      referenceTaskIds: [],
    },
    tenant: "",
  };
}

// partsText is the text of parts, a data part as its JSON.
export function partsText(parts) {
  return (parts ?? [])
    .map((p) => (p.content?.$case === "text" ? p.content.value : JSON.stringify(p.content?.value)))
    .join("");
}

// state is a task state's name.
export function state(s) {
  return TaskState[s] ?? String(s);
}
