// The live panel: a bidi method's conversation, opened as a WebSocket
// through the dev listener's WebSocket passthrough (methods.json lists
// where each door reaches the method). Under the platform's framing the
// page sends a setup frame naming the method once open, then each frame
// typed as {"bidi_stream_input": <the JSON>}; raw, the text as it is.
// Every frame either way is listed as it comes, then the close's code
// and reason.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") n.className = v;
      else n.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) n.append(k);
    return n;
  }

  // state: the method shown, its resource name, the conversation picked,
  // the socket while one is open and when it opened.
  const st = { method: null, resource: "", conv: null, ws: null, t0: 0 };

  const wsURL = (c) => `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${c.path}`;

  // show puts method m (its resource name given, for the setup frame) in
  // the panel, with a choice among the conversations that reach it.
  function show(m, resource) {
    if (st.method && st.method.name !== m.name) leave();
    st.method = m;
    st.resource = resource;
    $("live-title").textContent = m.name;
    $("live-description").textContent = m.description || "";
    $("live-description").hidden = !m.description;
    const sel = $("live-door");
    sel.replaceChildren();
    const list = m.live || [];
    list.forEach((c, i) => sel.append(el("option", { value: String(i) },
      `${c.protocol} · ${c.framing === "platform" ? "platform framing" : "raw frames"}`)));
    sel.hidden = list.length === 0;
    sel.onchange = () => pickConv(list[Number(sel.value)]);
    pickConv(list[0] || null);
  }

  // pickConv shows where conversation c is opened, or why it cannot be.
  function pickConv(c) {
    if (st.ws) close();
    st.conv = c;
    const note = $("live-note");
    note.hidden = true;
    $("live-where").hidden = !c;
    if (!c) {
      note.textContent = `No door converses with ${st.method.name}: add one to sidecar.yaml, e.g. ` +
        `protocols: {live: {mount: /live, method: ${st.method.name}}}`;
      note.hidden = false;
    } else if (!c.path) {
      note.textContent = `The ${c.protocol} door listens on its own port, which this page cannot open: ` +
        `use a WebSocket client at ${c.url}, or mount the door on the platform's port (mount: /live).`;
      note.hidden = false;
    }
    $("live-url").textContent = c ? (c.path ? wsURL(c) : c.url) : "";
    $("live-framing").textContent = !c ? "" : c.framing === "platform"
      ? "sent as {\"bidi_stream_input\": <the JSON>}, after a setup frame naming the method"
      : "sent as typed";
    $("live-input").value = c && c.framing === "platform" ? "{}" : "";
    buttons();
  }

  function buttons() {
    const open = !!st.ws;
    $("live-open").disabled = open || !st.conv || !st.conv.path;
    $("live-close").disabled = !open;
    $("live-send").disabled = !open || st.ws.readyState !== WebSocket.OPEN;
    $("live-door").disabled = open;
  }

  function status(text, cls) {
    const s = $("live-status");
    s.textContent = text;
    s.className = "status" + (cls ? " " + cls : "");
  }

  // row lists one frame: dir is "out" (sent), "in" (received) or "end".
  function row(dir, text) {
    const mark = { out: "→", in: "←", end: "■" }[dir] || "";
    const t = st.t0 ? `+${Math.round(performance.now() - st.t0)} ms` : "";
    const li = el("li", { class: dir }, el("span", { class: "dir" }, mark), el("span", { class: "t" }, t), el("code", {}, text));
    $("live-frames").append(li);
    li.scrollIntoView({ block: "nearest" });
    return li;
  }

  // text is a received frame as the panel shows it: binary as hex.
  function text(data) {
    if (typeof data === "string") return data;
    const hex = [...new Uint8Array(data)].map((b) => b.toString(16).padStart(2, "0")).join(" ");
    return `binary (${data.byteLength} bytes) ${hex}`;
  }

  function open() {
    const c = st.conv;
    if (!c || !c.path || st.ws) return;
    $("live-frames").replaceChildren();
    $("live-error").textContent = "";
    st.t0 = performance.now();
    const ws = new WebSocket(wsURL(c));
    ws.binaryType = "arraybuffer";
    st.ws = ws;
    status("opening", "running");
    buttons();
    ws.onopen = () => {
      status("open", "running");
      if (c.framing === "platform") {
        send(JSON.stringify({ setup: { name: st.resource, class_method: st.method.name } }));
      }
      buttons();
    };
    ws.onmessage = (e) => row("in", text(e.data));
    ws.onclose = (e) => {
      const normal = e.code === 1000 || (e.code >= 4000 && e.code < 5000);
      const end = `closed ${e.code}` + (e.reason ? ` ${e.reason}` : "");
      row("end", end).classList.toggle("failed", !normal);
      status(end, normal ? "ok" : "failed");
      if (st.ws === ws) st.ws = null;
      buttons();
    };
  }

  // send writes frame as it is and lists it.
  function send(frame) {
    st.ws.send(frame);
    row("out", frame);
  }

  // sendTyped sends the text box's frame in the conversation's framing.
  function sendTyped() {
    if (!st.ws || st.ws.readyState !== WebSocket.OPEN) return;
    const typed = $("live-input").value;
    if (st.conv.framing !== "platform") {
      send(typed);
      return;
    }
    let v;
    try {
      v = JSON.parse(typed);
    } catch (e) {
      $("live-error").textContent = "Invalid JSON: " + e.message;
      return;
    }
    $("live-error").textContent = "";
    send(JSON.stringify({ bidi_stream_input: v }));
  }

  function close() {
    if (st.ws) st.ws.close(1000, "closed in the playground");
  }

  // leave closes the conversation of the method the panel leaves.
  function leave() {
    if (st.ws) {
      st.ws.onmessage = null;
      st.ws.close(1000, "the playground moved on");
      st.ws = null;
    }
    st.method = null;
  }

  $("live-open").addEventListener("click", open);
  $("live-close").addEventListener("click", close);
  $("live-send").addEventListener("click", sendTyped);
  $("live-input").addEventListener("keydown", (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") sendTyped();
  });

  window.Live = { show, leave };
})();
