// Proves openai.mjs's fixtures with the official `openai` package: every
// variant is requested through the client (baseURL: the fixture server,
// first argument) with the package's own stream reader (Stream over SSE) and
// its accumulators (chat.completions.stream's finalChatCompletion,
// responses.stream's finalResponse), which check the order and shape of the
// events as they fold them. Prints one line per check; exits 1 on the first
// failure.
import assert from 'node:assert/strict';
import OpenAI, { APIError } from 'openai';

const client = new OpenAI({ baseURL: `${process.argv[2]}/v1`, apiKey: 'fixture', maxRetries: 0 });
const input = [{ role: 'user', content: 'What is the weather in Paris?' }];
const errorMessage = 'The server had an error while processing your request.';

async function rejects(promise, what) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof APIError, `${what}: ${err} is not an APIError`);
    assert.match(err.message, new RegExp(errorMessage.replace('.', '\\.')));
    return;
  }
  assert.fail(`${what}: no error`);
}

const checks = {
  async 'chat text'() {
    const stream = await client.chat.completions.create({ model: 'text', messages: input, stream: true });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'Hello, world!');
    const final = await client.chat.completions.stream({ model: 'text', messages: input }).finalChatCompletion();
    assert.equal(final.choices[0].message.content, 'Hello, world!');
    assert.equal(final.choices[0].finish_reason, 'stop');
  },
  async 'chat tool'() {
    const final = await client.chat.completions.stream({ model: 'tool', messages: input }).finalChatCompletion();
    const [call] = final.choices[0].message.tool_calls;
    assert.deepEqual([call.id, call.function.name, JSON.parse(call.function.arguments)], ['call_1', 'get_weather', { city: 'Paris' }]);
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
  },
  async 'chat error'() {
    const stream = await client.chat.completions.create({ model: 'error', messages: input, stream: true });
    let text = '';
    await rejects(
      (async () => {
        for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
      })(),
      'chat error',
    );
    assert.equal(text, 'Partial answer');
  },
  async 'responses text'() {
    const stream = client.responses.stream({ model: 'text', input });
    let text = '';
    stream.on('response.output_text.delta', (e) => (text += e.delta));
    const final = await stream.finalResponse();
    assert.equal(text, 'Hello, world!');
    assert.equal(final.output_text, 'Hello, world!');
    assert.equal(final.usage.total_tokens, 12);
  },
  async 'responses tool'() {
    const final = await client.responses.stream({ model: 'tool', input }).finalResponse();
    const [call] = final.output;
    assert.deepEqual([call.type, call.call_id, call.name, JSON.parse(call.arguments)], ['function_call', 'call_1', 'get_weather', { city: 'Paris' }]);
  },
  async 'responses error'() {
    const stream = await client.responses.create({ model: 'error', input, stream: true });
    const seen = [];
    await rejects(
      (async () => {
        for await (const e of stream) seen.push(e.type);
      })(),
      'responses error',
    );
    assert.equal(seen.at(-1), 'response.output_text.delta');
  },
  async 'responses image'() {
    const stream = client.responses.stream({ model: 'image', input });
    const partials = [];
    stream.on('response.image_generation_call.partial_image', (e) => partials.push(e.partial_image_index));
    const final = await stream.finalResponse();
    const [image] = final.output;
    assert.deepEqual([image.type, image.status, image.output_format, partials], ['image_generation_call', 'completed', 'png', [0]]);
    assert.equal(Buffer.from(image.result, 'base64').subarray(1, 4).toString(), 'PNG');
  },
  async 'responses failed'() {
    const stream = await client.responses.create({ model: 'failed', input, stream: true });
    let last;
    for await (const e of stream) last = e;
    assert.equal(last.type, 'response.failed');
    assert.equal(last.response.error.message, errorMessage);
  },
};

for (const [name, check] of Object.entries(checks)) {
  try {
    await check();
    console.log(`ok ${name}`);
  } catch (err) {
    console.log(`FAIL ${name}: ${err.stack || err}`);
    process.exit(1);
  }
}
