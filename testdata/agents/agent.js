#!/usr/bin/env node
// Test agent for the sidecar's Go tests (Node 20 built-ins only).
//
// Serves the same HTTP surface as agent.py so one Go test table runs against both.
//
// Environment:
//   AGENT_SOCKET  listen on this Unix socket path (a stale file is removed first)
//   PORT          otherwise listen on 127.0.0.1:$PORT (default 8000)
//
// stdout is a protocol read by the Go test, one line each:
//   READY           once, when the listener is bound and accepting
//   CANCELLED <id>  when a client goes away during /hang or /hang-headers
// Request logs go to stderr.
'use strict';

const http = require('node:http');
const fs = require('node:fs');

const HANG_LIMIT_MS = 60000;
let count = 0;

// process.stdout on a pipe or file is synchronous on Linux, so each line is flushed.
const say = (line) => process.stdout.write(line + '\n');

function sendFixed(req, res, status, ctype, body) {
  const buf = Buffer.from(body || '', 'utf8');
  const headers = {};
  if (ctype) headers['Content-Type'] = ctype;
  if (status !== 204 && status !== 304) headers['Content-Length'] = buf.length;
  res.writeHead(status, headers);
  res.end(req.method === 'HEAD' || status === 204 || status === 304 ? undefined : buf);
}

const sendJSON = (req, res, status, value) =>
  sendFixed(req, res, status, 'application/json', JSON.stringify(value));

function startStream(res, ctype) {
  res.writeHead(200, { 'Content-Type': ctype, 'Cache-Control': 'no-cache' });
  res.flushHeaders(); // no Content-Length: Node frames the body with chunked encoding
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Resolves once res can take more data again (or the client went away).
const drained = (res) => new Promise((resolve) => {
  const done = () => { res.off('drain', done); res.off('close', done); resolve(); };
  res.on('drain', done);
  res.on('close', done);
});

// Writes chunk(k) for k = 0..n-1, gapMs apart; each res.write is one flushed chunk.
async function streamN(res, n, gapMs, chunk) {
  for (let k = 0; k < n; k++) {
    if (k > 0 && gapMs > 0) await sleep(gapMs);
    if (res.destroyed) return;
    if (!res.write(chunk(k))) await drained(res);
  }
  if (!res.destroyed) res.end();
}

// Query-string integer, or def when absent; anything else is a 400.
function intParam(q, name, def) {
  const v = q.get(name);
  if (v === null) return def;
  if (!/^[+-]?\d+$/.test(v.trim())) throw new RangeError(`${name} is not an integer: ${v}`);
  return parseInt(v, 10);
}

// Calls onGone() if the client closes the connection before the response ends.
function onClientGone(res, onGone) {
  res.on('close', () => {
    if (!res.writableFinished) onGone();
  });
}

function hang(req, res, id, sendHeaders) {
  const timer = setTimeout(() => {
    if (sendHeaders) res.end();
    else sendJSON(req, res, 200, { hung: 'timeout' });
  }, HANG_LIMIT_MS);
  onClientGone(res, () => {
    clearTimeout(timer);
    say(`CANCELLED ${id}`);
  });
  if (sendHeaders) {
    startStream(res, 'application/x-ndjson');
    res.write('{"started": true}\n');
  }
}

function echo(req, res, raw) {
  // The body is spliced in verbatim when it is valid JSON, so big integers and
  // float spellings survive exactly; non-JSON bodies come back as a JSON string.
  const text = raw.toString('utf8').trim();
  let body = 'null';
  if (text) {
    try {
      JSON.parse(text);
      body = text;
    } catch {
      body = JSON.stringify(text);
    }
  }
  const headers = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i].toLowerCase();
    const value = req.rawHeaders[i + 1];
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  const out = `{"method": ${JSON.stringify(req.method)}, "path": ${JSON.stringify(req.url)}, ` +
    `"body": ${body}, "headers": ${JSON.stringify(headers)}}`;
  sendFixed(req, res, 200, 'application/json', out);
}

function route(req, res, raw) {
  // Route on the raw path: new URL() would resolve %2E%2E and friends.
  const qi = req.url.indexOf('?');
  const path = qi < 0 ? req.url : req.url.slice(0, qi);
  const q = new URLSearchParams(qi < 0 ? '' : req.url.slice(qi + 1));
  // Parameters may also come in a JSON object body (a method map cannot
  // put a query string in its path); the query string wins.
  let body = null;
  try { body = raw.length ? JSON.parse(raw.toString('utf8')) : null; } catch { body = null; }
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    for (const k of ['n', 'gap_ms', 'ms', 'id']) {
      if (k in body && !q.has(k)) q.set(k, String(body[k]));
    }
  }
  const n = intParam(q, 'n', 3);
  const gap = intParam(q, 'gap_ms', 0);
  const verb = req.method;

  if (path === '/echo' || path.startsWith('/echo/')) return echo(req, res, raw);
  if (path === '/health') {
    if (verb !== 'GET' && verb !== 'HEAD') return sendJSON(req, res, 405, { detail: 'method not allowed' });
    return sendJSON(req, res, 200, { status: 'ok' });
  }
  if (verb !== 'POST') return sendJSON(req, res, 405, { detail: 'method not allowed' });

  switch (path) {
    case '/sse':
      startStream(res, 'text/event-stream; charset=utf-8');
      return streamN(res, n, gap, (k) => `data: ${JSON.stringify({ i: k, text: `tok${k}` })}\n\n`);
    case '/ndjson':
      startStream(res, 'application/x-ndjson');
      return streamN(res, n, gap, (k) => `${JSON.stringify({ i: k })}\n`);
    case '/text':
      startStream(res, 'text/plain; charset=utf-8');
      return streamN(res, n, gap, (k) => `héllo ${k}\n`);
    case '/json-array':
      return sendFixed(req, res, 200, 'application/json', '[{"i":0},{"i":1},{"i":2}]');
    case '/bigint':
      return sendFixed(req, res, 200, 'application/json', '{"n": 12345678901234567890123, "f": 1.5e300}');
    case '/empty':
      return sendFixed(req, res, 204, null, '');
    case '/hang':
      return hang(req, res, q.get('id') ?? '', true);
    case '/hang-headers':
      return hang(req, res, q.get('id') ?? '', false);
    case '/crash': {
      startStream(res, 'application/x-ndjson');
      for (let k = 0; k < n; k++) res.write(`${JSON.stringify({ i: k })}\n`);
      // Half a line, then drop the connection without the terminating chunk.
      return res.write('{"i": ', () => res.socket && res.socket.destroy());
    }
    case '/sse-error':
      startStream(res, 'text/event-stream');
      res.write('data: {"i":0}\n\n');
      return res.end('event: error\ndata: {"message":"model overloaded"}\n\n');
    case '/sse-interpolated-error':
      startStream(res, 'text/event-stream');
      res.write('data: {"i":0}\n\n');
      return res.end('data: {"error": "Invalid value "x" here"}\n\n');
    case '/slow': {
      const ms = intParam(q, 'ms', 0);
      return setTimeout(() => {
        if (!res.destroyed) sendJSON(req, res, 200, { ok: true });
      }, ms);
    }
    case '/count':
      return sendJSON(req, res, 200, { count: ++count });
  }
  const m = /^\/status(-text)?\/(.*)$/.exec(path);
  if (m) {
    if (!/^[2-5]\d\d$/.test(m[2])) throw new RangeError(`not a status code: ${m[2]}`);
    const code = parseInt(m[2], 10);
    if (m[1]) return sendFixed(req, res, code, 'text/html', '<html><body>agent broke</body></html>');
    return sendJSON(req, res, code, { detail: `agent says ${code}` });
  }
  return sendJSON(req, res, 404, { detail: `not found: ${path}` });
}

const server = http.createServer((req, res) => {
  res.on('error', () => {}); // writes after a client vanished are expected here
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    process.stderr.write(`agent.js ${req.method} ${req.url}\n`);
    try {
      route(req, res, Buffer.concat(parts));
    } catch (err) {
      if (!res.headersSent) sendJSON(req, res, 400, { detail: `bad request: ${err.message}` });
      else res.destroy();
    }
  });
});

const sockPath = process.env.AGENT_SOCKET;
const unlinkSocket = () => {
  try { fs.unlinkSync(sockPath); } catch {}
};
if (sockPath) {
  unlinkSocket();
  server.listen(sockPath, () => say('READY'));
} else {
  server.listen(parseInt(process.env.PORT || '8000', 10), '127.0.0.1', () => say('READY'));
}

function stop() {
  server.close();
  server.closeAllConnections();
  if (sockPath) unlinkSocket();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
