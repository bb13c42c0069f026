// LangGraph (@langchain/langgraph + @langchain/core, see package.json): a
// compiled StateGraph over @langchain/core's fake chat models, streamed with
// the library's own graph.stream(input, { streamMode: [...] }), and framed
// as the LangGraph server (langgraph-api, not installed here) frames a
// POST /runs/stream reply. That framing is written by hand below, after
// langgraph-api's src/stream.mts and src/utils/serde.mts: a first
// `event: metadata` with {run_id, attempt}, then one `event: <mode>` +
// `data: <json>` frame per chunk (the `messages-tuple` mode is sent as
// `event: messages` with [message chunk, metadata]; messages are serialised
// as {...toDict().data, type}), `event: error` with {error, message} when
// the run throws, and the end of the run closes the stream. Body:
// {"input": {"messages": [...]}, "stream_mode": [...]}, stream_mode default
// ["messages-tuple", "updates"]; `messages`, `updates`, `values`, `custom`,
// `debug` pass through as the library yields them.
// POST /runs/stream with assistant_id (or POST /<assistant_id>): "text":
// the model answers; "tool": the model calls get_weather, a ToolNode runs
// it, the model answers; "error": the model streams some text, then the
// next node throws.
import { randomUUID } from 'node:crypto';
import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { FakeListChatModel, FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';
import { serve } from './serve.mjs';

const getWeather = tool(async ({ city }) => JSON.stringify({ city, forecast: 'sunny', celsius: 21 }), {
  name: 'get_weather',
  description: 'The weather in a city',
  schema: z.object({ city: z.string() }),
});

const answer = (text) => new FakeListChatModel({ responses: [text] });
const callsTool = () =>
  new FakeStreamingChatModel({
    chunks: [
      new AIMessageChunk({
        content: '',
        tool_calls: [{ id: 'call-1', name: 'get_weather', args: { city: 'Paris' }, type: 'tool_call' }],
      }),
    ],
  });

function graph(variant) {
  const g = new StateGraph(MessagesAnnotation);
  if (variant === 'text') {
    g.addNode('agent', async ({ messages }) => ({ messages: [await answer('Hello, world!').invoke(messages)] }))
      .addEdge(START, 'agent')
      .addEdge('agent', END);
  } else if (variant === 'tool') {
    g.addNode('agent', async ({ messages }) => {
      const last = messages[messages.length - 1];
      const model = last instanceof ToolMessage ? answer('It is sunny in Paris.') : callsTool();
      return { messages: [await model.invoke(messages)] };
    })
      .addNode('tools', new ToolNode([getWeather]))
      .addEdge(START, 'agent')
      .addConditionalEdges('agent', ({ messages }) => (messages[messages.length - 1].tool_calls?.length ? 'tools' : END))
      .addEdge('tools', 'agent');
  } else if (variant === 'error') {
    g.addNode('agent', async ({ messages }) => ({ messages: [await answer('Partial answer').invoke(messages)] }))
      .addNode('check', async () => {
        throw new Error('weather service unavailable');
      })
      .addEdge(START, 'agent')
      .addEdge('agent', 'check')
      .addEdge('check', END);
  } else {
    return undefined;
  }
  return g.compile();
}

// langgraph-api's serialiseAsDict: messages (anything with toDict) as
// {...data, type}.
const serialise = (obj) =>
  JSON.stringify(obj, function (key, value) {
    const raw = this[key];
    if (raw != null && typeof raw === 'object' && typeof raw.toDict === 'function') {
      const { type, data } = raw.toDict();
      return { ...data, type };
    }
    return value;
  });

const frame = (event, data) => new TextEncoder().encode(`event: ${event}\ndata: ${serialise(data)}\n\n`);

serve('langgraph', (variant, body) => {
  // POST /runs/stream names its graph by assistant_id; POST /<variant> too.
  const app = graph(body.assistant_id ?? variant);
  if (!app) return undefined;
  const modes = body.stream_mode ? [].concat(body.stream_mode) : ['messages-tuple', 'updates'];
  const libModes = [...new Set(modes.map((m) => (m === 'messages-tuple' ? 'messages' : m)))];
  const input = body.input ?? { messages: [new HumanMessage('What is the weather in Paris?')] };
  const runId = randomUUID();
  const stream = new ReadableStream({
    async start(controller) {
      controller.enqueue(frame('metadata', { run_id: runId, attempt: 1 }));
      try {
        for await (const [mode, chunk] of await app.stream(input, { streamMode: libModes, runId })) {
          controller.enqueue(frame(mode, chunk));
        }
      } catch (err) {
        controller.enqueue(frame('error', err instanceof Error ? { error: err.name, message: err.message } : { error: 'Error', message: JSON.stringify(err) }));
      }
      controller.close();
    },
  });
  return new Response(stream, {
    headers: {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'content-location': `/runs/${runId}`,
    },
  });
});
