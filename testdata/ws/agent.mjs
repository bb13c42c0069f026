// An agent's WebSocket server made with the `ws` npm package: GET /live
// echoes every message as it came (text as text, binary as binary); the
// text "bye" makes it close with 4000 "agent done". It listens on
// 127.0.0.1, on the port given (0: any), and prints "listening <port>"
// once it does. It also writes one line per upgrade to stdout:
// "upgrade <session id header>".
import { createRequire } from 'node:module';

// require, unlike import, finds the package through NODE_PATH.
const require = createRequire(import.meta.url);
const { WebSocketServer } = require('ws');

const wss = new WebSocketServer({ host: '127.0.0.1', port: Number(process.argv[2] || 0), path: '/live' });
wss.on('listening', () => console.log(`listening ${wss.address().port}`));
wss.on('connection', (ws, req) => {
  console.log(`upgrade ${req.headers['x-amzn-bedrock-agentcore-runtime-session-id'] || ''}`);
  ws.on('message', (data, isBinary) => {
    if (!isBinary && data.toString() === 'bye') {
      ws.close(4000, 'agent done');
      return;
    }
    ws.send(data, { binary: isBinary });
  });
});
