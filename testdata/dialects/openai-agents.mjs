// The OpenAI Agents SDK (@openai/agents, see package.json): an Agent run
// with the SDK's own run(agent, input, { stream: true }), over a fake Model
// (the SDK's Model interface: no network), its RunStreamEvents written as
// SSE the way a small node server does: one `data: JSON.stringify(event)`
// frame per event, and `event: error` with {message} when the run fails.
// POST /text: a plain answer. POST /tool: the model calls get_weather, the
// SDK runs the tool, the model answers with its result. POST /error: the
// model streams some text, then fails.
import { Agent, run, setTracingDisabled, tool } from '@openai/agents';
import { z } from 'zod';
import { serve } from './serve.mjs';

// No trace is exported: nothing here leaves the machine.
setTracingDisabled(true);

const usage = (input, output) => ({ requests: 1, inputTokens: input, outputTokens: output, totalTokens: input + output });

const message = (id, text) => ({
  type: 'message',
  id,
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text }],
});

// A turn of the fake model: its text deltas, then its output items.
const say = (id, ...deltas) => ({ deltas, output: [message(id, deltas.join(''))] });
const call = (callId, name, args) => ({
  deltas: [],
  output: [{ type: 'function_call', id: `fc_${callId}`, callId, name, arguments: JSON.stringify(args), status: 'completed' }],
});

// Each variant: the fake model's turns, in order; fail ends a turn with an
// error after its deltas.
const turns = {
  text: [say('msg_1', 'Hello', ', ', 'world!')],
  tool: [call('call-1', 'get_weather', { city: 'Paris' }), say('msg_2', 'It is sunny', ' in Paris.')],
  error: [{ ...say('msg_1', 'Partial ', 'answer'), fail: 'model overloaded' }],
};

class FakeModel {
  constructor(script) {
    this.script = script;
    this.turn = 0;
  }

  async getResponse() {
    const t = this.script[this.turn++];
    if (t.fail) throw new Error(t.fail);
    return { usage: usage(10, 5), output: t.output, responseId: `resp_${this.turn}` };
  }

  async *getStreamedResponse() {
    const t = this.script[this.turn++];
    yield { type: 'response_started' };
    for (const delta of t.deltas) yield { type: 'output_text_delta', delta };
    if (t.fail) throw new Error(t.fail);
    yield { type: 'response_done', response: { id: `resp_${this.turn}`, usage: usage(10, 5), output: t.output } };
  }
}

const getWeather = tool({
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => JSON.stringify({ city, forecast: 'sunny', celsius: 21 }),
});

const frame = (data, event) => new TextEncoder().encode(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);

serve('openai-agents', async (variant, body) => {
  const script = turns[variant];
  if (!script) return undefined;
  const agent = new Agent({
    name: 'weather_agent',
    instructions: 'Answer questions about the weather.',
    model: new FakeModel(script),
    tools: [getWeather],
  });
  const input = body.input ?? 'What is the weather in Paris?';
  const stream = new ReadableStream({
    async start(controller) {
      try {
        const result = await run(agent, input, { stream: true });
        for await (const event of result) controller.enqueue(frame(event));
        await result.completed;
        if (result.error) throw result.error;
      } catch (err) {
        controller.enqueue(frame({ message: err instanceof Error ? err.message : String(err) }, 'error'));
      }
      controller.close();
    },
  });
  return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
});
