// The Vercel AI SDK (ai, see package.json) as a chat route: streamText over
// the SDK's own MockLanguageModelV4 (ai/test), answered with
// result.toUIMessageStreamResponse(), the UI message stream useChat reads.
// POST /text: a plain answer. POST /tool: a tool call, the SDK runs the
// tool, a second step answers with its result. POST /error: the model fails
// mid-stream after some text; onError passes the message on (the default
// would mask it as "An error occurred."). POST /file: text, then an image
// the model generates (a file part), which the UI message stream sends as
// a file chunk with a data URL.
import { streamText, simulateReadableStream, tool, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { serve } from './serve.mjs';

const usage = (input, output) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
const finish = (reason, input, output) => ({
  type: 'finish',
  finishReason: { unified: reason, raw: undefined },
  logprobs: undefined,
  usage: usage(input, output),
});
const text = (id, ...deltas) => [
  { type: 'text-start', id },
  ...deltas.map((delta) => ({ type: 'text-delta', id, delta })),
  { type: 'text-end', id },
];

// A 1x1 PNG, base64: the image the file variant's model generates.
const dot = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

// Each variant: the model's stream parts per step.
const steps = {
  text: [[...text('t1', 'Hello', ', ', 'world!'), finish('stop', 3, 3)]],
  tool: [
    [
      { type: 'tool-input-start', id: 'call-1', toolName: 'get_weather' },
      { type: 'tool-input-delta', id: 'call-1', delta: '{"city":' },
      { type: 'tool-input-delta', id: 'call-1', delta: '"Paris"}' },
      { type: 'tool-input-end', id: 'call-1' },
      { type: 'tool-call', toolCallId: 'call-1', toolName: 'get_weather', input: '{"city":"Paris"}' },
      finish('tool-calls', 5, 8),
    ],
    [...text('t2', 'It is sunny', ' in Paris.'), finish('stop', 20, 6)],
  ],
  error: [[...text('t1', 'Partial ', 'answer'), { type: 'error', error: new Error('model overloaded') }]],
  file: [
    [
      ...text('t1', 'Here is ', 'the chart:'),
      { type: 'file', mediaType: 'image/png', data: { type: 'data', data: dot } },
      finish('stop', 4, 9),
    ],
  ],
};

serve('vercel', (variant) => {
  const script = steps[variant];
  if (!script) return undefined;
  let step = 0;
  const result = streamText({
    model: new MockLanguageModelV4({
      doStream: async () => ({
        stream: simulateReadableStream({ chunks: script[step++], chunkDelayInMs: 5 }),
      }),
    }),
    prompt: 'What is the weather in Paris?',
    tools: {
      get_weather: tool({
        description: 'The weather in a city',
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => ({ city, forecast: 'sunny', celsius: 21 }),
      }),
    },
    stopWhen: stepCountIs(script.length),
  });
  return result.toUIMessageStreamResponse({
    onError: (err) => (err instanceof Error ? err.message : String(err)),
  });
});
