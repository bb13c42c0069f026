// What the producers share: a node:http server on 127.0.0.1:$PORT (or the
// first argument) that hands each POST to a handler by the last path
// segment (the variant) and writes the Web Response the handler returns,
// body streamed as it comes, as a fetch-style framework host (Next.js, Hono)
// would. GET /health answers 200 "ok" once listening.
import http from 'node:http';
import { Readable } from 'node:stream';

export function serve(name, handler) {
  const port = Number(process.env.PORT || process.argv[2] || 0);
  const server = http.createServer(async (req, res) => {
    try {
      if (req.method === 'GET' && req.url === '/health') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
        return;
      }
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text ? JSON.parse(text) : {};
      const variant = new URL(req.url, 'http://x').pathname.split('/').filter(Boolean).pop() || '';
      const reply = await handler(variant, body, req);
      if (reply === undefined) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end(`${name}: no variant ${variant}\n`);
        return;
      }
      res.writeHead(reply.status, Object.fromEntries(reply.headers));
      if (reply.body) {
        Readable.fromWeb(reply.body).pipe(res);
      } else {
        res.end();
      }
    } catch (err) {
      console.error(`${name}:`, err);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err));
    }
  });
  server.listen(port, '127.0.0.1', () => {
    console.error(`${name} listening on 127.0.0.1:${server.address().port}`);
  });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
  return server;
}
