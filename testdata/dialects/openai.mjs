// OpenAI Chat Completions and Responses streams: fixtures, not a producer
// (no offline OpenAI server exists). Written from the published event
// reference (openai-python types/chat/chat_completion_chunk.py,
// types/responses/response_*_event.py; see docs PROTOCOLS.md §2.1, §2.2)
// and proved by openai-check.mjs, which reads every variant with the
// official `openai` package's own stream reader and accumulators.
// POST /v1/chat/completions and POST /v1/responses; the variant is the
// request's `model`: text, tool, error (Chat: an {"error": ...} frame
// mid-stream; Responses: an `event: error`), failed (Responses only:
// response.failed), image (Responses only: a generated image, its partial
// image, then the image_generation_call item done with its result).
import { serve } from './serve.mjs';

const created = 1764547200;
const model = 'gpt-fixture';

// --- Chat Completions: `data: <chunk>` frames, then `data: [DONE]`.
const chunk = (delta, finish_reason = null) => ({
  id: 'chatcmpl-fixture',
  object: 'chat.completion.chunk',
  created,
  model,
  system_fingerprint: 'fp_fixture',
  choices: [{ index: 0, delta, logprobs: null, finish_reason }],
});
const usage = (prompt, completion) => ({
  id: 'chatcmpl-fixture',
  object: 'chat.completion.chunk',
  created,
  model,
  system_fingerprint: 'fp_fixture',
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});
const chat = {
  text: [
    chunk({ role: 'assistant', content: '', refusal: null }),
    chunk({ content: 'Hello' }),
    chunk({ content: ', world!' }),
    chunk({}, 'stop'),
    usage(9, 3),
    '[DONE]',
  ],
  tool: [
    chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }], refusal: null }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
    chunk({}, 'tool_calls'),
    usage(40, 15),
    '[DONE]',
  ],
  error: [
    chunk({ role: 'assistant', content: '', refusal: null }),
    chunk({ content: 'Partial ' }),
    chunk({ content: 'answer' }),
    { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } },
  ],
};

// --- Responses: `event: <type>` + `data: {"type": <type>, "sequence_number": n, ...}`.
function response(status, output, extra = {}) {
  return {
    id: 'resp_fixture',
    object: 'response',
    created_at: created,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage: null,
    user: null,
    metadata: {},
    ...extra,
  };
}
const message = (status, text) => ({
  id: 'msg_1',
  type: 'message',
  status,
  role: 'assistant',
  content: text === undefined ? [] : [{ type: 'output_text', text, annotations: [], logprobs: [] }],
});
const part = (text) => ({ type: 'output_text', text, annotations: [], logprobs: [] });
const textItem = (deltas) => {
  const whole = deltas.join('');
  return [
    { type: 'response.output_item.added', output_index: 0, item: message('in_progress') },
    { type: 'response.content_part.added', item_id: 'msg_1', output_index: 0, content_index: 0, part: part('') },
    ...deltas.map((delta) => ({ type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta, logprobs: [] })),
    { type: 'response.output_text.done', item_id: 'msg_1', output_index: 0, content_index: 0, text: whole, logprobs: [] },
    { type: 'response.content_part.done', item_id: 'msg_1', output_index: 0, content_index: 0, part: part(whole) },
    { type: 'response.output_item.done', output_index: 0, item: message('completed', whole) },
  ];
};
const call = (status, args) => ({ id: 'fc_1', type: 'function_call', status, arguments: args, call_id: 'call_1', name: 'get_weather' });
const usageR = (input, output) => ({
  input_tokens: input,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: output,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: input + output,
});
const start = [
  { type: 'response.created', response: response('in_progress', []) },
  { type: 'response.in_progress', response: response('in_progress', []) },
];
// A 1x1 PNG, base64: the image variant's generated image (and its one
// partial image, which is not the image).
const dot = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const imageCall = (status, result) => ({
  id: 'ig_1',
  type: 'image_generation_call',
  status,
  ...(result === undefined ? {} : { background: 'opaque', output_format: 'png', quality: 'low', size: '1024x1024', revised_prompt: 'A single dot', result }),
});
const responses = {
  image: [
    ...start,
    { type: 'response.output_item.added', output_index: 0, item: imageCall('in_progress') },
    { type: 'response.image_generation_call.in_progress', output_index: 0, item_id: 'ig_1' },
    { type: 'response.image_generation_call.generating', output_index: 0, item_id: 'ig_1' },
    { type: 'response.image_generation_call.partial_image', output_index: 0, item_id: 'ig_1', partial_image_index: 0, partial_image_b64: dot },
    { type: 'response.image_generation_call.completed', output_index: 0, item_id: 'ig_1' },
    { type: 'response.output_item.done', output_index: 0, item: imageCall('completed', dot) },
    { type: 'response.completed', response: response('completed', [imageCall('completed', dot)], { usage: usageR(9, 3) }) },
  ],
  text: [
    ...start,
    ...textItem(['Hello', ', world!']),
    { type: 'response.completed', response: response('completed', [message('completed', 'Hello, world!')], { usage: usageR(9, 3) }) },
  ],
  tool: [
    ...start,
    { type: 'response.output_item.added', output_index: 0, item: call('in_progress', '') },
    { type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 0, delta: '{"city":' },
    { type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 0, delta: '"Paris"}' },
    { type: 'response.function_call_arguments.done', item_id: 'fc_1', output_index: 0, name: 'get_weather', arguments: '{"city":"Paris"}' },
    { type: 'response.output_item.done', output_index: 0, item: call('completed', '{"city":"Paris"}') },
    { type: 'response.completed', response: response('completed', [call('completed', '{"city":"Paris"}')], { usage: usageR(40, 15) }) },
  ],
  error: [
    ...start,
    ...textItem(['Partial ', 'answer']).slice(0, 4),
    { type: 'error', code: 'server_error', message: 'The server had an error while processing your request.', param: null },
  ],
  failed: [
    ...start,
    ...textItem(['Partial ', 'answer']).slice(0, 4),
    {
      type: 'response.failed',
      response: response('failed', [message('in_progress', 'Partial answer')], {
        error: { code: 'server_error', message: 'The server had an error while processing your request.' },
      }),
    },
  ],
};

const sse = (frames) =>
  new ReadableStream({
    async start(controller) {
      const enc = new TextEncoder();
      for (const f of frames) {
        controller.enqueue(enc.encode(f));
        await new Promise((r) => setTimeout(r, 2));
      }
      controller.close();
    },
  });
const headers = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': 'req_fixture' };

serve('openai', (variant, body) => {
  if (variant === 'completions') {
    const events = chat[body.model];
    if (!events) return undefined;
    return new Response(sse(events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`)), { headers });
  }
  if (variant === 'responses') {
    const events = responses[body.model];
    if (!events) return undefined;
    return new Response(
      sse(events.map((e, i) => `event: ${e.type}\ndata: ${JSON.stringify({ type: e.type, sequence_number: i, ...e })}\n\n`)),
      { headers },
    );
  }
  return undefined;
});
