'use strict';
// Calls sidecar dev's REST emulator with the platform's own Node client,
// @google-cloud/aiplatform (REST fallback), as proxy/devapi's
// TestNodeClient runs it:
//
//   NODE_PATH=<cache>/aiplatform/node_modules node client.js DEV_PORT AGENT_URL
//
// DEV_PORT is the emulator's port on 127.0.0.1; AGENT_URL the test agent's
// (POST /release lets a held stream line go). Prints one JSON object per
// line, {"step": …, …}, for the Go test to check; exits 0 unless something
// outside the checked steps breaks.

const http = require('http');
const {v1, helpers} = require('@google-cloud/aiplatform');
const {OAuth2Client} = require('google-auth-library');

const port = Number(process.argv[2]);
const agent = process.argv[3];
const name = 'projects/my-project/locations/us-central1/reasoningEngines/123';

// A fake token: the emulator has no auth, the client insists on one.
const authClient = new OAuth2Client();
authClient.setCredentials({access_token: 'fake-token', expiry_date: Date.now() + 3600e3});

const client = new v1.ReasoningEngineExecutionServiceClient({
  fallback: 'rest',
  apiEndpoint: '127.0.0.1',
  port,
  protocol: 'http',
  authClient,
});

function print(step, fields) {
  process.stdout.write(JSON.stringify({step, ...fields}) + '\n');
}

function errorFields(err) {
  return {code: err.code, message: String(err.message)};
}

function release() {
  return new Promise((resolve, reject) => {
    const req = http.request(agent + '/release', {method: 'POST'}, res => {
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
    req.end('{}');
  });
}

// One streamQuery: every chunk's data as text; after the first chunk,
// `afterFirst` runs (the agent holds the next line until it has).
function stream(request, afterFirst) {
  return new Promise(resolve => {
    const lines = [];
    const s = client.streamQueryReasoningEngine(request);
    s.on('data', chunk => {
      lines.push({contentType: chunk.contentType, data: Buffer.from(chunk.data).toString('utf8')});
      if (lines.length === 1 && afterFirst) {
        afterFirst().catch(err => print('release', {error: String(err)}));
      }
    });
    s.on('error', err => resolve({lines, error: errorFields(err)}));
    s.on('end', () => resolve({lines}));
  });
}

async function main() {
  // :query, the input built as the client needs it.
  const [resp] = await client.queryReasoningEngine({
    name,
    classMethod: 'echo',
    input: helpers.toValue({message: 'hi', n: 2}).structValue,
  });
  print('query', {output: helpers.fromValue(resp.output)});

  // A plain object as input: the client sends it empty.
  const [plain] = await client.queryReasoningEngine({name, classMethod: 'echo', input: {message: 'hi'}});
  print('plain_input', {output: helpers.fromValue(plain.output)});

  // A container error: 400 FAILED_PRECONDITION.
  try {
    await client.queryReasoningEngine({name, classMethod: 'fail', input: helpers.toValue({why: 'no luck'}).structValue});
    print('query_error', {error: null});
  } catch (err) {
    print('query_error', {error: errorFields(err)});
  }

  // :streamQuery: the second line is written only once the first arrived.
  const held = await stream({name, classMethod: 'stream', input: helpers.toValue({lines: 3, hold: true}).structValue},
    async () => { await release(); await release(); });
  print('stream', held);

  // A stream that fails after a line: the final error line is a chunk.
  print('stream_final_error', await stream({name, classMethod: 'stream', input: helpers.toValue({lines: 1, fail: true}).structValue}));

  // A unary method on :streamQuery: the container's 400, before any line.
  print('stream_error', await stream({name, classMethod: 'echo', input: helpers.toValue({}).structValue}));

  await client.close();
}

main().catch(err => {
  process.stderr.write('client.js: ' + (err && err.stack || err) + '\n');
  process.exit(1);
});
