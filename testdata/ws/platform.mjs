// A caller of the live door in the platform's bidi framing, made with the
// `ws` npm package: it opens the WebSocket at the URL given and sends the
// frames Agent Platform's Python SDK sends, as its json.dumps writes them
// (", " and ": " between items): the setup naming the class_method given
// (default talk) with the input {"query": "hello"}, then one
// bidi_stream_input. It prints each frame that comes back, "text <data>"
// or "binary <hex>"; after the second it closes with 1000 "caller done",
// and prints "close <code> <reason>".
import { createRequire } from 'node:module';

// require, unlike import, finds the package through NODE_PATH.
const require = createRequire(import.meta.url);
const WebSocket = require('ws');

const [url, method = 'talk'] = process.argv.slice(2);
const ws = new WebSocket(url);
let got = 0;
ws.on('open', () => {
  ws.send(`{"setup": {"name": "projects/P/locations/L/reasoningEngines/ID", "class_method": "${method}", "input": {"query": "hello"}}}`);
  ws.send('{"bidi_stream_input": {"query": "h\u00e9llo again", "n": [1, 2]}}');
});
ws.on('message', (data, isBinary) => {
  console.log(isBinary ? `binary ${Buffer.from(data).toString('hex')}` : `text ${data}`);
  if (++got === 2) ws.close(1000, 'caller done');
});
ws.on('close', (code, reason) => console.log(`close ${code} ${reason}`));
ws.on('error', (err) => {
  console.error(err.message);
  process.exitCode = 1;
});
