// A tiny agent to run behind the sidecar: TypeScript on Node's built-in
// modules, compiled by tsc (`npm ci && npm run build`, as
// deploy/examples/Dockerfile.node's build stage does) to dist/agent.js.
//
// Replace the two handlers with your real agent (call your model, run your tools, ...).
// The sidecar turns the Agent Platform's calls into plain HTTP calls to this process:
//
//   GET  /health                     -> 200 {"status":"ok"}      (readiness probe, not logged)
//   POST /query  {"message":"hi"}    -> 200 {"text":"Echo: hi"}  (method `query`)
//   POST /stream {"message":"a b"}   -> application/x-ndjson      (method `stream_query`)
//        {"text":"a "}
//        {"text":"b "}
//
// Build and run it:
//   npm ci && npm run build
//   PORT=8000 node dist/agent.js                     # TCP on 127.0.0.1:8000 (the default)
//   AGENT_SOCKET=/tmp/agent.sock node dist/agent.js  # or a Unix socket
//
// Try it:
//   curl -s localhost:8000/query -d '{"message": "hello"}'
//   curl -N localhost:8000/stream -d '{"message": "one two three"}'
import * as fs from 'node:fs';
import * as http from 'node:http';

type Reply = http.ServerResponse;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// --- the agent's logic ----------------------------------------------------

async function handle(req: http.IncomingMessage, res: Reply): Promise<void> {
  if (req.method === 'GET' && req.url === '/health') {
    return sendJSON(res, 200, { status: 'ok' });
  }
  if (req.method !== 'POST' || (req.url !== '/query' && req.url !== '/stream')) {
    return sendJSON(res, 404, { detail: 'not found' });
  }

  // "message" is the user's text: the platform's callers send it (the method
  // map's parameters), and so do the A2A and OpenAI-compatible doors, with
  // "messages" (the conversation as [{role, content}], ready for a model
  // call) and "ids" (docs/doors.md, one input shape).
  let message: string;
  try {
    message = String((await readJSON(req)).message ?? '');
  } catch {
    return sendJSON(res, 400, { detail: 'body must be a JSON object' });
  }

  if (req.url === '/query') {
    // A unary call: one JSON answer. The sidecar wraps it as {"output": ...}.
    return sendJSON(res, 200, { text: `Echo: ${message}` });
  }

  // A streaming call: one JSON object per line, one line per "token".
  // Each res.write() goes out at once, so the sidecar can forward it right away.
  res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'Cache-Control': 'no-cache' });
  let gone = false;
  res.on('close', () => { gone = true; }); // the caller hung up: stop generating
  for (const word of message.split(/\s+/).filter(Boolean)) {
    if (gone) return;
    res.write(JSON.stringify({ text: `${word} ` }) + '\n');
    await sleep(50); // pretend the model is thinking
  }
  res.end();
}

// --- small helpers --------------------------------------------------------

function readJSON(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', reject);
    req.on('end', () => {
      try {
        const text = Buffer.concat(chunks).toString('utf8').trim();
        const body: unknown = text ? JSON.parse(text) : {};
        if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new Error('not an object');
        resolve(body as Record<string, unknown>);
      } catch (err) {
        reject(err);
      }
    });
  });
}

function sendJSON(res: Reply, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

// --- the server -----------------------------------------------------------

const server = http.createServer((req, res) => {
  const started = Date.now();
  res.on('finish', () => {
    // The sidecar probes GET /health every second: a line for each would
    // bury the calls. A probe that fails is still logged.
    if (req.url === '/health' && res.statusCode === 200) return;
    // One line per request, on stderr.
    console.error(`agent: ${req.method} ${req.url} ${res.statusCode} ${Date.now() - started}ms`);
  });
  handle(req, res).catch((err: unknown) => {
    console.error('agent: error:', err);
    if (!res.headersSent) sendJSON(res, 500, { detail: 'internal error' });
    else res.destroy();
  });
});

const socketPath = process.env.AGENT_SOCKET;
if (socketPath) {
  fs.rmSync(socketPath, { force: true }); // left over from a previous run
  server.listen(socketPath, () => console.error(`agent: listening on unix:${socketPath}`));
} else {
  const port = Number(process.env.PORT || 8000);
  server.listen(port, '127.0.0.1', () => console.error(`agent: listening on http://127.0.0.1:${port}`));
}

// SIGTERM (from the sidecar or the platform) and Ctrl-C both stop the server.
function stop(): void {
  server.close(); // stop accepting; also removes the Unix socket file
  server.closeAllConnections();
  console.error('agent: stopped');
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
