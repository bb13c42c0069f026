import * as http from 'node:http';

async function readMessage(req: http.IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return String(JSON.parse(body).message);
}

const server = http.createServer(async (req, res) => {
  if (req.method === 'GET' && req.url === '/health') {
    // The sidecar's readiness probe.
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":"ok"}');
  } else if (req.method === 'POST' && req.url === '/query') {
    const text = `Echo: ${await readMessage(req)}`;
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ text }));
  } else if (req.method === 'POST' && req.url === '/stream') {
    const message = await readMessage(req);
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    // Call your model here: one event per token, written as it comes.
    for (const word of message.split(' ')) {
      res.write(`data: ${JSON.stringify({ text: word + ' ' })}\n\n`);
    }
    res.end();
  } else {
    res.writeHead(404).end();
  }
});

// The sidecar sets PORT to its upstream's port.
server.listen(Number(process.env.PORT ?? 8000), '127.0.0.1');
