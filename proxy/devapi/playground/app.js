// The sidecar playground: calls the dev listener's platform REST routes
// and shows what the agent answers. Plain browser JavaScript, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { info: null, method: null, inputs: {}, session: "" };

// el builds an element: el("div", {class: "x"}, child, "text", …).
function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") n.className = v;
    else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v);
  }
  for (const k of kids) if (k != null) n.append(k);
  return n;
}

const streaming = (m) => m.api_mode === "stream" || m.api_mode === "async_stream";
const live = (m) => m.api_mode === "bidi";
const verb = (m) => (streaming(m) ? ":streamQuery" : ":query");
const isADK = () => state.info && state.info.preset === "adk";

function resourcePath() {
  const i = state.info;
  return `projects/${i.project}/locations/${i.location}/reasoningEngines/${i.engine}`;
}

// localURL is the emulator's route; platformURL is the same call on Google Cloud.
function localURL(m) {
  return `/${state.info.api}/${resourcePath()}${verb(m)}` + (streaming(m) ? "?alt=sse" : "");
}
function platformURL(m) {
  const i = state.info;
  return `https://${i.location}-aiplatform.googleapis.com/${i.api}/${resourcePath()}${verb(m)}` +
    (streaming(m) ? "?alt=sse" : "");
}

async function load() {
  try {
    const r = await fetch("/playground/methods.json", { cache: "no-store" });
    if (!r.ok) throw new Error(`GET /playground/methods.json: HTTP ${r.status}`);
    state.info = await r.json();
  } catch (e) {
    $("load-error").textContent = String(e.message || e);
    $("load-error").hidden = false;
    return;
  }
  const i = state.info;
  $("engine").textContent = `${i.api}/${resourcePath()}` + (i.adk_app ? ` · ADK app ${i.adk_app}` : "");
  const list = $("methods");
  for (const m of i.methods) {
    const b = el("button", { type: "button", "data-method": m.name, onclick: () => pick(m) },
      el("span", { class: "name" }, m.name), window.Transcript.mode(m),
      m.description ? el("span", { class: "desc", title: m.description }, m.description) : null);
    list.append(el("li", {}, b));
  }
  if (isADK()) {
    $("session-bar").hidden = false;
    $("user-id").addEventListener("change", () => { state.session = ""; refreshSessions(); });
    $("session").addEventListener("change", (e) => { state.session = e.target.value; });
    $("new-session").addEventListener("click", newSession);
    refreshSessions();
  }
  // The map's first method; the ADK preset, whose order is not the user's
  // (it starts with the deprecated create_session), opens on its chat.
  const first = (isADK() && methodByName(["stream_query"])) || i.methods[0];
  if (first) pick(first);
  loadDoors();
}

// loadDoors lists the sidecar's enabled doors, each with how to call it: a
// door mounted on the contract listener at its URL through the dev
// listener's passthrough, the URL's shape in production.
async function loadDoors() {
  let doors = [];
  try {
    const r = await fetch("/playground/doors.json", { cache: "no-store" });
    if (!r.ok) throw new Error(`GET /playground/doors.json: HTTP ${r.status}`);
    doors = (await r.json()).doors || [];
  } catch (e) {
    $("load-error").textContent = String(e.message || e);
    $("load-error").hidden = false;
    return;
  }
  $("doors-head").hidden = doors.length === 0;
  $("doors-json").hidden = doors.length === 0;
  for (const d of doors) {
    const b = el("button", { type: "button", "data-door": d.protocol, onclick: () => showDoor(d) },
      el("span", { class: "name" }, d.protocol),
      d.mount ? el("span", { class: "mount" }, `mounted at ${d.mount}`) : null,
      el("span", { class: "url" }, d.passthrough_url || d.url));
    $("doors").append(el("li", {}, b));
  }
}

// showDoor shows a door's examples, a curl and its ecosystem's client: a
// mounted door's for its passthrough URL, its direct URL beside them.
function showDoor(d) {
  for (const b of document.querySelectorAll("#doors button")) {
    b.classList.toggle("active", b.dataset.door === d.protocol);
  }
  const through = !!d.passthrough_url;
  $("door-title").textContent = d.protocol;
  $("door-url").textContent = through ? d.passthrough_url : d.url;
  $("door-direct").textContent = through ? d.url : "";
  $("door-direct-row").hidden = !through;
  $("door-platform").textContent = d.platform_url || "";
  $("door-platform-row").hidden = !d.platform_url;
  $("door-curl").textContent = (through ? d.passthrough_curl : d.curl) || "(this door gives no example)";
  $("door-client").textContent = (through ? d.passthrough_client : d.client) || "";
  $("door-client-lang").textContent = d.client_lang || "client";
  $("door-view").hidden = false;
}

function copyDoor(id) {
  const text = $(id).textContent;
  if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => {});
}

function pick(m) {
  if (state.method && !live(state.method)) state.inputs[state.method.name] = $("input").value;
  state.method = m;
  for (const b of document.querySelectorAll("#methods button")) {
    b.classList.toggle("active", b.dataset.method === m.name);
  }
  // A bidi method is a conversation: the live panel (live.js), not a call.
  $("method-view").hidden = live(m);
  $("live-view").hidden = !live(m);
  if (live(m)) {
    window.Live.show(m, resourcePath());
    return;
  }
  window.Live.leave();
  $("method-title").textContent = m.name;
  $("method-mode").replaceWith(Object.assign(window.Transcript.mode(m), { id: "method-mode" }));
  $("method-route").textContent = "POST " + verb(m) + (streaming(m) ? "?alt=sse" : "");
  $("method-description").textContent = m.description || "";
  $("method-description").hidden = !m.description;
  const example = m.example != null ? m.example : (isADK() && ADK_EXAMPLES[m.name]) || {};
  $("input").value = state.inputs[m.name] ?? JSON.stringify(example, null, 2);
  $("snippet").hidden = true;
  validate();
}

// validate parses the editor: a JSON object, or null with the reason shown.
function validate() {
  let v;
  try {
    v = JSON.parse($("input").value);
    if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("the input must be a JSON object");
  } catch (e) {
    $("input-error").textContent = "Invalid input: " + e.message;
    $("input").classList.add("invalid");
    $("run").disabled = true;
    return null;
  }
  $("input-error").textContent = "";
  $("input").classList.remove("invalid");
  $("run").disabled = false;
  return v;
}

// Inputs for the ADK preset's methods when the map gives no example; the
// session bar adds user_id and session_id.
const ADK_EXAMPLES = {
  stream_query: { message: "What is the weather in Paris?" },
  async_stream_query: { message: "What is the weather in Paris?" },
  streaming_agent_run_with_events: { request_json: JSON.stringify({ message: "What is the weather in Paris?" }) },
  async_search_memory: { query: "weather" },
};

// Which methods take the session bar's user_id and session_id.
const NO_USER = new Set(["async_add_session_to_memory"]);
const NO_SESSION = new Set(["create_session", "async_create_session", "list_sessions",
  "async_list_sessions", "async_search_memory", "async_add_session_to_memory"]);

// withSession merges the session bar's choice into an input (ADK preset).
function withSession(name, input) {
  if (!isADK()) return input;
  const out = { ...input };
  const user = $("user-id").value.trim() || "u1";
  if (name === "streaming_agent_run_with_events") {
    let rj = {};
    try { rj = JSON.parse(out.request_json || "{}"); } catch (e) { return out; }
    rj.user_id = user;
    if (state.session) rj.session_id = state.session;
    out.request_json = JSON.stringify(rj);
    return out;
  }
  if (!NO_USER.has(name)) out.user_id = user;
  if (state.session && !NO_SESSION.has(name)) out.session_id = state.session;
  return out;
}

// call POSTs one class_method to the emulator; the reply's head goes to
// onHead (its Server-Timing header), lines to onLine (streaming), and the
// result is {status, ok, body, error}.
async function call(m, input, onLine, onHead) {
  const r = await fetch(localURL(m), {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ class_method: m.name, input }),
  });
  if (onHead) onHead(r.headers.get("Server-Timing"));
  if (!r.ok || !streaming(m)) {
    const text = await r.text();
    let body = null;
    try { body = JSON.parse(text); } catch (e) { /* not JSON */ }
    return { status: r.status, ok: r.ok, body, text };
  }
  // SSE: "data: <line>" events separated by a blank line, parsed as they come.
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let cut;
    while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
      const event = buf.slice(0, cut);
      buf = buf.slice(cut).replace(/^\r?\n\r?\n/, "");
      const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      if (data !== "") onLine(data);
    }
  }
  if (buf.trim().startsWith("data:")) onLine(buf.trim().slice(5).replace(/^ /, ""));
  return { status: r.status, ok: true };
}

function methodByName(names) {
  return state.info.methods.find((m) => names.includes(m.name));
}

async function refreshSessions() {
  const m = methodByName(["async_list_sessions", "list_sessions"]);
  if (!m) return;
  const user = $("user-id").value.trim() || "u1";
  const sel = $("session");
  try {
    const r = await call(m, { user_id: user });
    if (!r.ok) throw new Error(errorText(r.body, r.text));
    const sessions = (r.body && r.body.output && r.body.output.sessions) || [];
    sel.replaceChildren(el("option", { value: "" }, "none (one per call)"));
    for (const s of sessions) sel.append(el("option", { value: s.id }, s.id));
    if (state.session && !sessions.some((s) => s.id === state.session)) state.session = "";
    sel.value = state.session;
    $("session-note").textContent = `${sessions.length} session(s) for ${user}`;
  } catch (e) {
    $("session-note").textContent = "listing sessions failed: " + e.message;
  }
}

async function newSession() {
  const m = methodByName(["async_create_session", "create_session"]);
  if (!m) return;
  const user = $("user-id").value.trim() || "u1";
  const r = await call(m, { user_id: user });
  if (!r.ok || !r.body || !r.body.output) {
    $("session-note").textContent = "New session failed: " + errorText(r.body, r.text);
    return;
  }
  state.session = r.body.output.id;
  await refreshSessions();
}

function errorText(body, text) {
  if (body && body.error) return body.error.message || JSON.stringify(body.error);
  return text || "no body";
}

// ---------------------------------------------------------------- snippets

function pyValue(v, ind) {
  const pad = "    ".repeat(ind + 1), end = "    ".repeat(ind);
  if (v === null) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "string" || typeof v === "number") return JSON.stringify(v);
  if (Array.isArray(v)) {
    if (v.length === 0) return "[]";
    return "[\n" + v.map((x) => pad + pyValue(x, ind + 1)).join(",\n") + ",\n" + end + "]";
  }
  const keys = Object.keys(v);
  if (keys.length === 0) return "{}";
  return "{\n" + keys.map((k) => pad + JSON.stringify(k) + ": " + pyValue(v[k], ind + 1)).join(",\n") + ",\n" + end + "}";
}

function curlSnippet(m, input) {
  const body = JSON.stringify({ class_method: m.name, input }).replace(/'/g, "'\\''");
  return [
    `curl -X POST "${platformURL(m)}" \\`,
    `  -H "Authorization: Bearer $(gcloud auth print-access-token)" \\`,
    `  -H "Content-Type: application/json" \\`,
    `  -d '${body}'`,
  ].join("\n");
}

function pythonSnippet(m, input) {
  const i = state.info;
  const head = [
    "import vertexai",
    "from vertexai import agent_engines",
    "",
    `vertexai.init(project=${JSON.stringify(i.project)}, location=${JSON.stringify(i.location)})`,
    `remote = agent_engines.get(${JSON.stringify(resourcePath())})`,
    `payload = ${pyValue(input, 0)}`,
  ];
  const name = m.name;
  switch (m.api_mode) {
    case "stream":
      return head.concat([`for event in remote.${name}(**payload):`, "    print(event)"]).join("\n");
    case "async":
      return ["import asyncio"].concat(head, ["", "async def main():",
        `    print(await remote.${name}(**payload))`, "", "asyncio.run(main())"]).join("\n");
    case "async_stream":
      return ["import asyncio"].concat(head, ["", "async def main():",
        `    async for event in remote.${name}(**payload):`, "        print(event)", "",
        "asyncio.run(main())"]).join("\n");
    default:
      return head.concat([`print(remote.${name}(**payload))`]).join("\n");
  }
}

// nodeSnippet is the call as a Node script: the same request as the curl
// snippet, with fetch (built into Node 20 and later); a stream's
// server-sent events are printed one data line at a time, as they come.
function nodeSnippet(m, input) {
  const head = [
    "// Node 20 or later. Save as call.mjs, then:",
    "//   TOKEN=\"$(gcloud auth print-access-token)\" node call.mjs",
    `const url = ${JSON.stringify(platformURL(m))};`,
    `const input = ${JSON.stringify(input, null, 2)};`,
    "const res = await fetch(url, {",
    "  method: \"POST\",",
    "  headers: { Authorization: `Bearer ${process.env.TOKEN}`, \"Content-Type\": \"application/json\" },",
    `  body: JSON.stringify({ class_method: ${JSON.stringify(m.name)}, input }),`,
    "});",
    "if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);",
  ];
  if (!streaming(m)) return head.concat(["console.log(JSON.stringify((await res.json()).output));"]).join("\n");
  return head.concat([
    "const decoder = new TextDecoder();",
    "let buf = \"\";",
    "for await (const chunk of res.body) {",
    "  buf += decoder.decode(chunk, { stream: true });",
    "  let end;",
    "  while ((end = buf.indexOf(\"\\n\")) >= 0) {",
    "    const line = buf.slice(0, end).replace(/\\r$/, \"\");",
    "    buf = buf.slice(end + 1);",
    "    if (line.startsWith(\"data:\")) console.log(line.slice(5).replace(/^ /, \"\"));",
    "  }",
    "}",
  ]).join("\n");
}

const snippets = { curl: curlSnippet, python: pythonSnippet, node: nodeSnippet };

// copyText shows text in target and puts it on the clipboard when allowed.
function copyText(text, target, what) {
  target.textContent = text;
  target.hidden = false;
  target.dataset.kind = what;
  if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => {});
}

function copyCurrent(kind) {
  const v = validate();
  if (!v || !state.method) return;
  const input = withSession(state.method.name, v);
  copyText(snippets[kind](state.method, input), $("snippet"), kind);
}

// ---------------------------------------------------------------- runs

async function run() {
  const v = validate();
  if (!v || !state.method) return;
  const m = state.method;
  await runCall(m, withSession(m.name, v));
}

// runCall makes one call of m with input and shows it in a card of its
// own. An agent's question in it is answered by the next call: the same
// method, the same input plus reply (docs/questions.md).
async function runCall(m, input) {
  const view = window.Transcript.start(m, input, {
    curl: () => curlSnippet(m, input),
    python: () => pythonSnippet(m, input),
    node: () => nodeSnippet(m, input),
    copy: copyText,
    answer: (reply) => runCall(m, { ...input, reply }),
  });
  $("run").disabled = true;
  const t0 = performance.now();
  try {
    const r = await call(m, input, (line) => view.line(line, performance.now() - t0),
      (timing) => view.head(timing, performance.now() - t0));
    if (!r.ok) view.httpError(r.status, r.body, r.text, performance.now() - t0);
    else if (!streaming(m)) view.reply(r.text, r.body, performance.now() - t0);
    view.done(performance.now() - t0);
  } catch (e) {
    view.httpError(0, null, String(e.message || e), performance.now() - t0);
    view.done(performance.now() - t0);
  } finally {
    $("run").disabled = false;
    validate();
  }
  if (isADK()) refreshSessions();
}

$("door-close").addEventListener("click", () => {
  $("door-view").hidden = true;
  for (const b of document.querySelectorAll("#doors button")) b.classList.remove("active");
});
$("copy-door-curl").addEventListener("click", () => copyDoor("door-curl"));
$("copy-door-client").addEventListener("click", () => copyDoor("door-client"));
$("input").addEventListener("input", validate);
$("run").addEventListener("click", run);
$("copy-curl").addEventListener("click", () => copyCurrent("curl"));
$("copy-python").addEventListener("click", () => copyCurrent("python"));
$("copy-node").addEventListener("click", () => copyCurrent("node"));
$("input").addEventListener("keydown", (e) => {
  if ((e.ctrlKey || e.metaKey) && e.key === "Enter") run();
});
window.addEventListener("DOMContentLoaded", load);
