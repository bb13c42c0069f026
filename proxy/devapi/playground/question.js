// An agent's question in a call's card (docs/questions.md): the
// input_required record, or ADK's own pause (a tool confirmation, a
// long-running tool's call), shown with a form built from its schema.
// The answer is the next call: the same method, the same input plus
// reply {id, action, content}.
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

  // The schema of a tool confirmation's answer, as the sidecar maps it.
  const CONFIRMATION = {
    type: "object",
    properties: { confirmed: { type: "boolean" }, payload: {} },
    required: ["confirmed"],
  };

  // of returns the questions a line holds: its input_required record, a
  // whole unary output's input_required member, or the ADK event's
  // confirmation and long-running calls; [] for none.
  function of(obj) {
    if (!obj || typeof obj !== "object" || Array.isArray(obj)) return [];
    const q = obj.input_required;
    if (q && typeof q === "object" && typeof q.message === "string") return [q];
    const list = Array.isArray(obj.events) ? obj.events : [obj];
    const out = [];
    for (const ev of list) {
      if (!ev || !ev.content || !Array.isArray(ev.content.parts)) continue;
      const long = ev.longRunningToolIds || ev.long_running_tool_ids || [];
      for (const p of ev.content.parts) {
        const fc = p.functionCall || p.function_call;
        if (!fc || !fc.id) continue;
        if (fc.name === "adk_request_confirmation") {
          const args = fc.args || {};
          const conf = args.toolConfirmation || args.tool_confirmation || {};
          const orig = args.originalFunctionCall || args.original_function_call || {};
          out.push({ id: fc.id, kind: "form", schema: CONFIRMATION,
            message: (conf.hint || "").trim() || `Approve ${orig.name || "the tool call"}?` });
        } else if (fc.name === "adk_request_input" && long.includes(fc.id)) {
          // ADK's own request_input: the model's message and response_schema.
          const args = fc.args || {};
          const rs = args.response_schema;
          out.push({ id: fc.id, kind: "form", message: String(args.message || "The agent asks for input"),
            schema: rs && rs.type === "object" ? rs : { type: "object" } });
        } else if (long.includes(fc.id)) {
          out.push({ id: fc.id, kind: "form", schema: { type: "object" },
            message: `${fc.name}(${JSON.stringify(fc.args || {})}) waits for its result` });
        }
      }
    }
    return out;
  }

  // field is the input of one schema property, or null for a property the
  // form cannot edit (an object, an array, any value).
  function field(name, prop, required) {
    const label = prop.title || name;
    const attrs = { name, "data-field": name };
    if (required) attrs.required = "";
    let input;
    if (Array.isArray(prop.enum)) {
      input = el("select", attrs, required ? null : el("option", { value: "" }, "—"));
      prop.enum.forEach((v, i) => input.append(el("option", { value: String(i) }, String(v))));
      input.dataset.kind = "enum";
      if (prop.default !== undefined) input.value = String(prop.enum.indexOf(prop.default));
    } else if (prop.type === "boolean") {
      input = el("input", { ...attrs, type: "checkbox" });
      input.removeAttribute("required"); // unchecked is an answer: false
      input.dataset.kind = "boolean";
      if (prop.default === true) input.checked = true;
    } else if (prop.type === "integer" || prop.type === "number") {
      input = el("input", { ...attrs, type: "number", step: prop.type === "integer" ? "1" : "any" });
      if (prop.minimum !== undefined) input.min = prop.minimum;
      if (prop.maximum !== undefined) input.max = prop.maximum;
      input.dataset.kind = prop.type;
      if (prop.default !== undefined) input.value = String(prop.default);
    } else if (prop.type === "string") {
      input = el("input", { ...attrs, type: prop.format === "email" ? "email" : "text" });
      input.dataset.kind = "string";
      if (prop.default !== undefined) input.value = String(prop.default);
    } else {
      return null;
    }
    return el("label", { class: "field" }, el("span", {}, label + (required ? " *" : "")), input,
      prop.description ? el("small", {}, prop.description) : null);
  }

  // content reads the form's fields into the answer's content.
  function content(form, schema) {
    const out = {};
    for (const input of form.querySelectorAll("[data-field]")) {
      const name = input.dataset.field;
      const prop = schema.properties[name];
      switch (input.dataset.kind) {
        case "boolean": out[name] = input.checked; break;
        case "enum": if (input.value !== "") out[name] = prop.enum[Number(input.value)]; break;
        case "integer": if (input.value !== "") out[name] = parseInt(input.value, 10); break;
        case "number": if (input.value !== "") out[name] = Number(input.value); break;
        default: if (input.value !== "" || (schema.required || []).includes(name)) out[name] = input.value;
      }
    }
    return out;
  }

  // render appends q's block to chat; answer(reply) sends the reply as the
  // next call. The block's buttons answer once.
  function render(chat, q, answer, label) {
    const schema = q.schema && q.schema.properties ? q.schema : null;
    const form = el("form", { class: "question-form", novalidate: "" });
    const note = el("p", { class: "note" });
    const box = el("div", { class: "question", "data-kind": q.kind || "form", "data-id": q.id || "" },
      el("div", { class: "label" }, el("span", {}, label || "the agent asks")),
      el("p", { class: "message" }, q.message), form, note);
    const send = (action, c) => {
      for (const b of form.querySelectorAll("button, input, select")) b.disabled = true;
      const reply = { action };
      if (q.id) reply.id = q.id;
      if (c !== undefined) reply.content = c;
      box.dataset.answered = action;
      note.textContent = `answered: ${action}`;
      answer(reply);
    };
    const button = (text, cls, f) => el("button", { type: "button", class: cls, onclick: f }, text);
    if (q.kind === "url" && /^https?:\/\//.test(q.url || "")) {
      form.append(el("p", {}, el("a", { href: q.url, target: "_blank", rel: "noopener noreferrer", class: "question-url" }, q.url)));
      form.append(el("div", { class: "buttons" }, button("Done", "primary answer", () => send("accept")),
        button("Decline", "decline", () => send("decline")), button("Cancel", "cancel", () => send("cancel"))));
    } else {
      if (schema) {
        const required = new Set(schema.required || []);
        for (const [name, prop] of Object.entries(schema.properties)) {
          const f = field(name, prop || {}, required.has(name));
          if (f) form.append(f);
        }
      }
      const text = schema ? null : el("textarea", { class: "question-text", rows: "2", "aria-label": "answer" });
      if (text) form.append(text);
      const accept = () => {
        if (!form.reportValidity()) return;
        if (schema) send("accept", content(form, schema));
        else send("accept", text.value.trim() === "" ? undefined : { text: text.value });
      };
      form.addEventListener("submit", (e) => { e.preventDefault(); accept(); });
      form.append(el("div", { class: "buttons" }, button("Answer", "primary answer", accept),
        button("Decline", "decline", () => send("decline")), button("Cancel", "cancel", () => send("cancel"))));
    }
    chat.append(box);
    return box;
  }

  window.Question = { of, render };
})();
