// One call's timeline, drawn as a small waterfall beside its output: the
// sidecar's phases from the reply's Server-Timing header (queue, connect,
// agent: to the agent's first byte, one after the other from the call's
// start), then, measured in the page, each record's arrival and the end.
"use strict";

(function () {
  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
    for (const k of kids) if (k != null) n.append(k);
    return n;
  }
  const fmt = (t) => (t < 10 ? t.toFixed(2).replace(/\.?0+$/, "") : String(Math.round(t))) + " ms";

  // The most record ticks drawn; the row's label counts them all.
  const MAX_TICKS = 200;

  // The sidecar's phases, in the order they happen, and what each is.
  const PHASES = [
    ["queue", "waiting for a concurrency slot in the sidecar"],
    ["connect", "to a connection to the agent (readiness, dial)"],
    ["agent", "the agent's time to its first byte"],
  ];

  // parseServerTiming reads a Server-Timing header (W3C Server Timing):
  // "name;dur=12.3;desc=…, name2…" into {name: dur}.
  function parseServerTiming(v) {
    const out = {};
    for (const entry of (v || "").split(",")) {
      const [name, ...params] = entry.split(";").map((s) => s.trim());
      if (!name) continue;
      for (const p of params) {
        const [k, val] = p.split("=");
        if (k.trim().toLowerCase() === "dur" && !isNaN(parseFloat(val))) out[name] = parseFloat(val);
      }
    }
    return out;
  }

  // start returns the timeline of one call, appended to parent.
  function start(parent) {
    const grid = el("div", { class: "rows" });
    const box = el("aside", { class: "timeline", "aria-label": "timeline" },
      el("div", { class: "tl-head" }, "timeline"), grid);
    parent.append(box);
    const phases = []; // {phase, from, to}
    const records = []; // arrival times, ms from the call's start
    let end = null, recordLabel = "records", pending = false;

    function row(phase, label, title, value) {
      const track = el("span", { class: "track" });
      grid.append(el("span", { class: "lbl", title }, label), track, el("span", { class: "val" }, value));
      return track;
    }
    function place(node, from, to, total) {
      node.style.left = (100 * from / total) + "%";
      if (to != null) node.style.width = (100 * Math.max(to - from, 0) / total) + "%";
    }
    function draw() {
      pending = false;
      const last = phases.length ? phases[phases.length - 1].to : 0;
      const total = Math.max(end ?? 0, last, records.length ? records[records.length - 1] : 0) || 1;
      grid.replaceChildren();
      for (const p of phases) {
        const bar = el("span", { class: "bar", "data-phase": p.phase, "data-ms": p.to - p.from });
        place(bar, p.from, p.to, total);
        row(p.phase, p.phase, p.title, fmt(p.to - p.from)).append(bar);
      }
      if (records.length) {
        const first = records[0], lastRec = records[records.length - 1];
        const track = row("records", `${recordLabel} · ${records.length}`, "each record's arrival in the page",
          `+${fmt(first)}`);
        const range = el("span", { class: "range" });
        place(range, first, lastRec, total);
        track.append(range);
        // At most MAX_TICKS ticks, evenly picked, the last always: a long
        // stream's thousands would cost a redraw per frame and look the same.
        const step = Math.ceil(records.length / (MAX_TICKS - 1));
        records.forEach((t, i) => {
          if (i % step !== 0 && i !== records.length - 1) return;
          const tick = el("span", { class: "bar tick", "data-phase": "record", "data-ms": t });
          place(tick, t, null, total);
          track.append(tick);
        });
      }
      if (end != null) {
        const mark = el("span", { class: "bar mark", "data-phase": "end", "data-ms": end });
        place(mark, end, null, total);
        row("end", "end", "the reply's end, in the page", fmt(end)).append(mark);
      }
    }
    // Redraw once per frame at most, however fast records come.
    function later() {
      if (!pending) { pending = true; requestAnimationFrame(draw); }
    }

    return {
      // head takes the reply's Server-Timing: its phases, one after the other.
      head(header) {
        const durs = parseServerTiming(header);
        let at = 0;
        for (const [phase, title] of PHASES) {
          if (!(phase in durs)) continue;
          phases.push({ phase, title, from: at, to: at + durs[phase] });
          at += durs[phase];
        }
        later();
      },
      record(t, label) {
        if (label) recordLabel = label;
        records.push(t);
        later();
      },
      done(t) {
        end = t;
        draw();
      },
    };
  }

  window.Timeline = { start, parseServerTiming };
})();
