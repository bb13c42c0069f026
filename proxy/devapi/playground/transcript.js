// One call's card: a chat transcript of ADK-shaped events (user message,
// model text, tool calls and results), generic blocks for other replies,
// errors, and the raw lines with their arrival times one toggle away.
"use strict";

(function () {
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
  const ms = (t) => `+${Math.round(t)} ms`;
  // pretty shows short JSON on one line and longer JSON indented.
  function pretty(v) {
    if (typeof v === "string") return v;
    const flat = JSON.stringify(v);
    return flat.length <= 90 ? flat.replace(/,"/g, ', "').replace(/":/g, '": ') : JSON.stringify(v, null, 2);
  }
  // mode is a method's api_mode badge: the map's word, or "unary" for
  // the default, which the map writes "" (or leaves out); the tooltip
  // gives the mode as the map takes it and the route it is served on.
  function mode(m) {
    const label = m.api_mode || "unary";
    if (m.api_mode === "bidi") {
      return el("span", { class: "mode", title: "mode: bidi, a conversation over a WebSocket (the live panel)" }, label);
    }
    const route = m.api_mode === "stream" || m.api_mode === "async_stream" ? ":streamQuery" : ":query";
    const as = m.api_mode ? m.api_mode : '"" (the default)';
    return el("span", { class: "mode", title: `mode: ${as}, served on ${route}` }, label);
  }
  const who = (name, t) => el("div", { class: "who" }, el("span", {}, name), el("span", { class: "t" }, ms(t)));

  // userText is the message a call sends, if it is a chat turn.
  function userText(input) {
    let msg = input.message;
    if (msg == null && typeof input.request_json === "string") {
      try { msg = JSON.parse(input.request_json).message; } catch (e) { /* not JSON */ }
    }
    if (typeof msg === "string") return msg;
    if (msg && Array.isArray(msg.parts)) return msg.parts.map((p) => p.text || "").join("");
    return null;
  }

  // events returns the ADK events a line holds, or null when it holds none.
  function events(obj) {
    if (!obj || typeof obj !== "object") return null;
    const list = Array.isArray(obj.events) ? obj.events : [obj];
    const adk = list.filter((e) => e && e.content && Array.isArray(e.content.parts));
    return adk.length ? adk : null;
  }

  // Parts that are not text (docs/parts.md): a part record
  // ({"inline_data"|"file_data"|"data": …}) or an ADK part, either key
  // case. partOf reads one into {kind, mime, data, uri, name, value}, or
  // null when obj is not one.
  function partOf(obj) {
    if (!obj || typeof obj !== "object" || Array.isArray(obj)) return null;
    const keys = Object.keys(obj);
    const inline = obj.inline_data || obj.inlineData;
    const file = obj.file_data || obj.fileData;
    const get = (o, snake, camel) => (typeof o[snake] === "string" ? o[snake] : typeof o[camel] === "string" ? o[camel] : "");
    if (inline && typeof inline === "object") {
      return { kind: "inline", mime: get(inline, "mime_type", "mimeType"), data: get(inline, "data", "data"), name: get(inline, "display_name", "displayName") };
    }
    if (file && typeof file === "object") {
      return { kind: "file", mime: get(file, "mime_type", "mimeType"), uri: get(file, "file_uri", "fileUri"), name: get(file, "display_name", "displayName") };
    }
    if (keys.length === 1 && keys[0] === "data") return { kind: "data", value: obj.data };
    return null;
  }
  // Only the image types a browser renders without running anything: no
  // SVG from an agent. Audio plays in the browser's own player.
  const safeImage = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
  const safeAudio = new Set(["audio/wav", "audio/x-wav", "audio/wave", "audio/mpeg", "audio/mp3", "audio/ogg", "audio/webm", "audio/aac", "audio/flac", "audio/mp4"]);
  // dataURL is the data URL of an inline part's bytes, or null when its
  // base64 is not base64 (URL-safe and wrapped base64 is made standard).
  function dataURL(mime, data) {
    const b64 = data.replace(/\s+/g, "").replace(/-/g, "+").replace(/_/g, "/");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 === 1) return null;
    return `data:${mime};base64,${b64}${"=".repeat((4 - (b64.length % 4)) % 4)}`;
  }
  // partView shows a part: an image, an audio player, a link (http and
  // https only, opened with no opener or referrer), data as JSON, any
  // other bytes as their type and size.
  function partView(p) {
    const mime = (p.mime || "").split(";")[0].trim().toLowerCase();
    const label = [p.kind === "data" ? "data" : mime || "file", p.name].filter(Boolean).join(" · ");
    const box = el("div", { class: "part", "data-kind": p.kind }, el("div", { class: "label" }, el("span", {}, label)));
    if (p.kind === "data") {
      box.append(el("pre", {}, pretty(p.value)));
      return box;
    }
    if (p.kind === "file") {
      let url = null;
      try { url = new URL(p.uri); } catch (e) { /* not a URL */ }
      if (url && (url.protocol === "https:" || url.protocol === "http:")) {
        box.append(el("a", { href: url.href, target: "_blank", rel: "noopener noreferrer" }, p.name || url.href));
      } else box.append(el("code", {}, p.uri));
      return box;
    }
    const src = dataURL(mime, p.data);
    if (src && safeImage.has(mime)) box.append(el("img", { src, alt: p.name || mime }));
    else if (src && safeAudio.has(mime)) box.append(el("audio", { src, controls: "" }));
    else box.append(el("code", {}, `${Math.floor((p.data.replace(/[\s=]/g, "").length * 3) / 4)} bytes`));
    return box;
  }

  function errorOf(obj) {
    if (!obj || typeof obj !== "object" || obj.error == null || obj.content) return null;
    const e = obj.error;
    if (typeof e === "string") return { message: e };
    return e;
  }

  function start(m, input, snip) {
    const head = el("header", {});
    const chat = el("div", { class: "chat" });
    const raw = el("ol", { class: "raw", hidden: "" });
    const snippet = el("pre", { class: "snippet", hidden: "" });
    const status = el("span", { class: "status running" }, "running…");
    const rawBtn = el("button", { type: "button", class: "toggle", "aria-pressed": "false" }, "Raw lines (0)");
    const output = el("div", { class: "output-col" }, chat, raw);
    const body = el("div", { class: "call-body" }, output);
    const card = el("article", { class: "call", "data-state": "running", "data-method": m.name },
      head, body, snippet);
    const timeline = window.Timeline.start(body);
    head.append(
      el("span", { class: "name" }, m.name),
      mode(m),
      status,
      el("span", { class: "spacer" }),
      rawBtn,
      el("button", { type: "button", onclick: () => snip.copy(snip.curl(), snippet, "curl") }, "curl"),
      el("button", { type: "button", onclick: () => snip.copy(snip.python(), snippet, "python") }, "Python"),
      el("button", { type: "button", onclick: () => snip.copy(snip.node(), snippet, "node") }, "Node"),
    );
    rawBtn.addEventListener("click", () => {
      const show = raw.hidden;
      raw.hidden = !show;
      chat.hidden = show;
      rawBtn.setAttribute("aria-pressed", String(show));
    });
    const calls = document.getElementById("calls");
    calls.append(card);

    // An answer to a question shows as the user's turn: its action and content.
    const said = input.reply ? `${input.reply.action}` + (input.reply.content !== undefined ? ` ${JSON.stringify(input.reply.content)}` : "") : userText(input);
    if (said != null) chat.append(el("div", { class: "msg user" }, el("div", { class: "who" }, "user"), el("div", { class: "text" }, said)));
    else chat.append(el("div", { class: "invocation" }, el("code", {}, `${m.name}(${JSON.stringify(input)})`)));

    let lines = 0, growing = null, failed = false;
    const scroll = () => card.scrollIntoView({ block: "end" });

    function addRaw(text, t) {
      lines++;
      raw.append(el("li", { class: "line" }, el("span", { class: "t" }, ms(t)), el("code", {}, text)));
      rawBtn.textContent = `Raw lines (${lines})`;
    }
    function block(cls, label, body, t) {
      const b = el("div", { class: cls },
        el("div", { class: "label" }, el("span", {}, label), el("span", { class: "t" }, ms(t))),
        body == null ? null : el("pre", {}, pretty(body)));
      chat.append(b);
      return b;
    }
    function modelText(ev, text, t) {
      if (ev.partial) {
        if (!growing) {
          growing = el("div", { class: "msg model growing" }, who(ev.author || "model", t), el("div", { class: "text" }, ""));
          chat.append(growing);
        }
        growing.querySelector(".text").textContent += text;
        return;
      }
      if (growing) {
        growing.querySelector(".text").textContent = text;
        growing.querySelector(".who .t").textContent = ms(t);
        growing.classList.remove("growing");
        growing = null;
        return;
      }
      chat.append(el("div", { class: "msg model" }, who(ev.author || "model", t), el("div", { class: "text" }, text)));
    }
    function render(ev, t) {
      for (const p of ev.content.parts) {
        const fc = p.function_call || p.functionCall;
        const fr = p.function_response || p.functionResponse;
        if (typeof p.text === "string" && !p.thought) modelText(ev, p.text, t);
        else if (fc) block("tool call", `tool call · ${fc.name}`, fc.args || {}, t);
        else if (fr) block("tool result", `tool result · ${fr.name}`, fr.response != null ? fr.response : null, t);
        else if (partOf(p) && p.data === undefined) showPart(partOf(p), t);
      }
    }
    function showPart(p, t) {
      const v = partView(p);
      v.querySelector(".label").append(el("span", { class: "t" }, ms(t)));
      chat.append(v);
    }
    // ask shows the agent's questions, each answered by the next call.
    function ask(questions) {
      for (const q of questions) window.Question.render(chat, q, snip.answer);
    }
    function inband(e, t) {
      failed = true;
      const label = "error line in the stream" + (e.code ? ` · ${e.code}` : "") + (e.reason ? ` · ${e.reason}` : "") + (e.status ? ` · ${e.status}` : "");
      block("error inband", label, e.message || e, t);
    }

    return {
      head(timing, t) {
        timeline.head(timing, t);
      },
      line(text, t) {
        addRaw(text, t);
        timeline.record(t);
        let obj;
        try { obj = JSON.parse(text); } catch (e) { block("line", "line (not JSON)", text, t); scroll(); return; }
        const err = errorOf(obj);
        const evs = events(obj);
        const asked = window.Question.of(obj);
        const part = partOf(obj);
        if (err) inband(err, t);
        else if (part) showPart(part, t);
        else if (evs) evs.forEach((ev) => render(ev, t));
        else if (!asked.length) block("line", "line", obj, t);
        ask(asked);
        status.textContent = `streaming… ${lines} line${lines === 1 ? "" : "s"}`;
        scroll();
      },
      reply(text, body, t) {
        addRaw(text, t);
        timeline.record(t, "reply");
        const out = body && "output" in body ? body.output : body;
        const evs = events(out) || (Array.isArray(out) ? out.flatMap((x) => events(x) || []) : null);
        if (evs && evs.length) evs.forEach((ev) => render(ev, t));
        else if (out && typeof out === "object" && out.input_required && typeof out.text === "string") {
          if (out.text) modelText({}, out.text, t); // the text before the question
        } else block("output", "output", out === undefined ? text : out, t);
        if (out && typeof out === "object" && Array.isArray(out.parts)) {
          out.parts.map(partOf).filter(Boolean).forEach((p) => showPart(p, t)); // emit text's whole
        }
        ask(window.Question.of(out));
        if (Array.isArray(out)) out.forEach((x) => ask(window.Question.of(x)));
        scroll();
      },
      httpError(code, body, text, t) {
        failed = true;
        addRaw(text, t);
        const e = (body && body.error) || {};
        const label = code ? `HTTP ${code}` + (e.status ? ` · ${e.status}` : "") : "request failed";
        block("error http", label, e.message || text, t);
        scroll();
      },
      done(t) {
        timeline.done(t);
        if (growing) growing.classList.remove("growing");
        card.dataset.state = failed ? "error" : "done";
        status.className = "status " + (failed ? "failed" : "ok");
        status.textContent = (failed ? "failed" : "done") + ` · ${lines} line${lines === 1 ? "" : "s"} · ${Math.round(t)} ms`;
      },
    };
  }

  window.Transcript = { start, mode };
})();
