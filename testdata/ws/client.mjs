// A caller made with the `ws` npm package: it opens the WebSocket at the
// URL given, sends a text message, a binary one, then "bye" (which the
// test agents answer by closing with 4000), and prints what came back,
// one line each: "text <data>", "binary <hex>", then "close <code>
// <reason>". A second argument, "leave", closes from the caller's side
// with 1000 instead of sending "bye".
import { createRequire } from 'node:module';

// require, unlike import, finds the package through NODE_PATH.
const require = createRequire(import.meta.url);
const WebSocket = require('ws');

const [url, how] = process.argv.slice(2);
const ws = new WebSocket(url, { headers: { 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': 's'.repeat(33) } });
const want = 2;
let got = 0;
ws.on('open', () => {
  ws.send('{"say":"héllo"}');
  ws.send(Buffer.from([0, 1, 2, 255]));
});
ws.on('message', (data, isBinary) => {
  console.log(isBinary ? `binary ${Buffer.from(data).toString('hex')}` : `text ${data}`);
  if (++got === want) {
    if (how === 'leave') ws.close(1000, 'caller done');
    else ws.send('bye');
  }
});
ws.on('close', (code, reason) => console.log(`close ${code} ${reason}`));
ws.on('error', (err) => {
  console.error(err.message);
  process.exitCode = 1;
});
