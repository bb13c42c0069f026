// AG-UI (@ag-ui/core, @ag-ui/encoder, see package.json) as an agent endpoint
// serves it: POST a RunAgentInput, get the run's events, each checked
// against @ag-ui/core's EventSchema and written by @ag-ui/encoder's
// EventEncoder (negotiated from Accept; SSE for text/event-stream).
// No model: the events are the ones an agent emits for the run.
// POST /text: two text messages. POST /tool: a tool call with its args,
// end and result, then an answer. POST /error: text, then RUN_ERROR.
import { EventType } from '@ag-ui/core';
import { EventSchema } from '@ag-ui/core/schemas';
import { EventEncoder } from '@ag-ui/encoder';
import { serve } from './serve.mjs';

const message = (messageId, ...deltas) => [
  { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' },
  ...deltas.map((delta) => ({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta })),
  { type: EventType.TEXT_MESSAGE_END, messageId },
];

const bodies = {
  text: [...message('msg-1', 'Hello', ', world!'), ...message('msg-2', 'Anything ', 'else?')],
  tool: [
    { type: EventType.TOOL_CALL_START, toolCallId: 'call-1', toolCallName: 'get_weather', parentMessageId: 'msg-1' },
    { type: EventType.TOOL_CALL_ARGS, toolCallId: 'call-1', delta: '{"city":' },
    { type: EventType.TOOL_CALL_ARGS, toolCallId: 'call-1', delta: '"Paris"}' },
    { type: EventType.TOOL_CALL_END, toolCallId: 'call-1' },
    { type: EventType.TOOL_CALL_RESULT, messageId: 'tool-1', toolCallId: 'call-1', content: '{"forecast":"sunny","celsius":21}', role: 'tool' },
    ...message('msg-2', 'It is sunny', ' in Paris.'),
  ],
  error: [...message('msg-1', 'Partial ', 'answer')],
};

serve('agui', (variant, input, req) => {
  const body = bodies[variant];
  if (!body) return undefined;
  const threadId = input.threadId || 'thread-1';
  const runId = input.runId || 'run-1';
  const events = [
    { type: EventType.RUN_STARTED, threadId, runId },
    ...body,
    variant === 'error'
      ? { type: EventType.RUN_ERROR, message: 'model overloaded', code: 'UPSTREAM_ERROR' }
      : { type: EventType.RUN_FINISHED, threadId, runId },
  ];
  const encoder = new EventEncoder({ accept: req.headers.accept });
  const stream = new ReadableStream({
    async start(controller) {
      for (const event of events) {
        controller.enqueue(encoder.encodeBinary(EventSchema.parse(event)));
        await new Promise((r) => setTimeout(r, 5));
      }
      controller.close();
    },
  });
  return new Response(stream, {
    headers: { 'content-type': encoder.getContentType(), 'cache-control': 'no-cache' },
  });
});
