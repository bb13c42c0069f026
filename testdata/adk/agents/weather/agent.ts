/**
 * Offline test agent for the sidecar's Go integration tests.
 *
 * App name: `weather` (the directory name). Served by
 * `@google/adk-devtools` `api_server` via ../../start.sh.
 *
 * The model never touches the network. Its behaviour is deterministic:
 *   - last request content is a user text message  -> one function call
 *     `get_weather({city: <the user's text>})`;
 *   - last request content is the function response -> the text
 *     `The weather in <city> is sunny.`; with `stream` true it first yields
 *     3 partial chunks (`partial: true`), then the complete text
 *     (`partial: false`, `turnComplete: true`), as streaming models do.
 *   - a user message of exactly `__error__` makes the model throw (used to
 *     provoke an error after /run_sse has sent its headers).
 */
import {
  BaseLlm,
  FunctionTool,
  LlmAgent,
  type BaseLlmConnection,
  type LlmRequest,
  type LlmResponse,
} from '@google/adk';
import type { Content, Part } from '@google/genai';
import { z } from 'zod';

const getWeather = new FunctionTool({
  name: 'get_weather',
  description: 'Returns the weather forecast for a city.',
  parameters: z.object({
    city: z.string().describe('The city to get the weather for.'),
  }),
  execute: ({ city }) => ({ city, forecast: 'sunny', temp_c: 21 }),
});

function partsOf(content: Content | undefined): Part[] {
  return content?.parts ?? [];
}

class OfflineWeatherLlm extends BaseLlm {
  constructor() {
    super({ model: 'offline-weather' });
  }

  async *generateContentAsync(
    llmRequest: LlmRequest,
    stream = false,
  ): AsyncGenerator<LlmResponse, void> {
    const contents = llmRequest.contents ?? [];
    const last = contents[contents.length - 1];
    const parts = partsOf(last);

    const fnResponse = parts.find((p) => p.functionResponse)?.functionResponse;
    if (fnResponse) {
      const resp = (fnResponse.response ?? {}) as { city?: unknown };
      const city = typeof resp.city === 'string' ? resp.city : 'unknown';
      const text = `The weather in ${city} is sunny.`;
      if (stream) {
        // Three partial chunks whose concatenation is the full text.
        const cut1 = Math.floor(text.length / 3);
        const cut2 = Math.floor((2 * text.length) / 3);
        for (const chunk of [
          text.slice(0, cut1),
          text.slice(cut1, cut2),
          text.slice(cut2),
        ]) {
          yield {
            content: { role: 'model', parts: [{ text: chunk }] },
            partial: true,
          };
        }
      }
      yield {
        content: { role: 'model', parts: [{ text }] },
        partial: false,
        turnComplete: true,
      };
      return;
    }

    const userText = parts
      .map((p) => p.text ?? '')
      .join('')
      .trim();
    if (userText === '__error__') {
      throw new Error('offline model: provoked failure');
    }
    yield {
      content: {
        role: 'model',
        parts: [
          { functionCall: { name: 'get_weather', args: { city: userText } } },
        ],
      },
      partial: false,
      turnComplete: true,
    };
  }

  async connect(_llmRequest: LlmRequest): Promise<BaseLlmConnection> {
    throw new Error('OfflineWeatherLlm does not support live connections.');
  }
}

export const rootAgent = new LlmAgent({
  name: 'weather',
  description: 'Answers weather questions (offline test agent).',
  instruction: 'Use get_weather to answer.',
  model: new OfflineWeatherLlm(),
  tools: [getWeather],
});
