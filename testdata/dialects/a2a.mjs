// A2A (@a2a-js/sdk's server over express, see package.json) as an agent
// serves it: the SDK's DefaultRequestHandler, its express jsonRpcHandler at
// POST / with the v0.3 compatibility layer on (so `message/stream` without
// an A2A-Version header, or with 0.3, is answered in v0.3 shapes;
// `SendStreamingMessage` with `A2A-Version: 1.0` in v1.0 shapes), its REST
// handler at /rest, and the agent card at /.well-known/agent-card.json.
// No model: the executor publishes what an agent does for a task: the task,
// a working status with a message, the answer as an artifact in two
// appended chunks, completed. A user message containing "fail" ends the task
// failed instead, with a status message saying why.
import express from 'express';
import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const port = Number(process.env.PORT || process.argv[2] || 0);
const base = `http://127.0.0.1:${port}`;
const text = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const now = () => new Date().toISOString();
const pause = () => new Promise((r) => setTimeout(r, 5));

const card = {
  name: 'Weather agent',
  description: 'Answers weather questions (offline: canned answers)',
  supportedInterfaces: [
    { url: `${base}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
    { url: `${base}/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
    // The compat layer answers 0.3 requests only when the card says so.
    { url: `${base}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
  ],
  provider: { organization: 'sidecar tests', url: 'https://example.com' },
  version: '1.0.0',
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text'],
  defaultOutputModes: ['text'],
  skills: [
    {
      id: 'weather',
      name: 'Weather',
      description: 'The weather in a city',
      tags: ['weather'],
      examples: ['What is the weather in Paris?'],
      inputModes: ['text'],
      outputModes: ['text'],
      securityRequirements: [],
    },
  ],
  documentationUrl: '',
  signatures: [],
};

class WeatherExecutor {
  cancelTask = async () => {};

  async execute(ctx, bus) {
    const { taskId, contextId, userMessage } = ctx;
    const asked = userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(' ');
    const agentMessage = (value) => ({
      role: Role.ROLE_AGENT,
      messageId: `${taskId}-status`,
      parts: [text(value)],
      taskId,
      contextId,
      extensions: [],
      metadata: {},
      referenceTaskIds: [],
    });
    const status = (state, message) =>
      AgentEvent.statusUpdate({ taskId, contextId, status: { state, timestamp: now(), message }, metadata: undefined });
    if (!ctx.task) {
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: now(), message: undefined },
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        }),
      );
    }
    await pause();
    bus.publish(status(TaskState.TASK_STATE_WORKING, agentMessage('Looking up the weather')));
    await pause();
    if (/fail/i.test(asked)) {
      bus.publish(status(TaskState.TASK_STATE_FAILED, agentMessage('weather service unavailable')));
      return;
    }
    const chunks = ['It is sunny', ' in Paris.'];
    for (const [i, chunk] of chunks.entries()) {
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: { artifactId: 'answer', name: 'answer', description: '', parts: [text(chunk)], metadata: undefined, extensions: [] },
          append: i > 0,
          lastChunk: i === chunks.length - 1,
          metadata: undefined,
        }),
      );
      await pause();
    }
    bus.publish(status(TaskState.TASK_STATE_COMPLETED, undefined));
  }
}

const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new WeatherExecutor());
const app = express();
app.get('/health', (_req, res) => res.send('ok'));
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler, legacyCompat: { enabled: true } }));
app.use('/rest', restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
app.use('/', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
const server = app.listen(port, '127.0.0.1', () => console.error(`a2a listening on 127.0.0.1:${server.address().port}`));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
