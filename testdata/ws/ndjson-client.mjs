// A caller made with the `ws` npm package for an agent without a
// WebSocket server (examples/live-ndjson): it opens the WebSocket at the
// URL given, sends {"say":"héllo"}, then {"bye":true} once answered, and
// prints what came back, one line each: "text <data>", then "close
// <code> <reason>".
import { createRequire } from 'node:module';

// require, unlike import, finds the package through NODE_PATH.
const require = createRequire(import.meta.url);
const WebSocket = require('ws');

const [url] = process.argv.slice(2);
const ws = new WebSocket(url);
let got = 0;
ws.on('open', () => ws.send('{"say":"héllo"}'));
ws.on('message', (data, isBinary) => {
  console.log(isBinary ? `binary ${Buffer.from(data).toString('hex')}` : `text ${data}`);
  if (++got === 1) ws.send(JSON.stringify({ bye: true }));
});
ws.on('close', (code, reason) => console.log(`close ${code} ${reason}`));
ws.on('error', (err) => {
  console.error(err.message);
  process.exitCode = 1;
});
