/**
 * Offline test agent whose tools pause the run for a person: the
 * human-in-the-loop cases of the sidecar's ADK tests.
 *
 * App name: `transfer` (the directory name). Served with `weather` by
 * `@google/adk-devtools` `api_server` via ../../start.sh.
 *
 * The model never touches the network. Its behaviour is deterministic:
 *   - a user text `approve <amount>` -> one function call
 *     `transfer_money({amount})`, a tool that requires confirmation: ADK
 *     answers with its `adk_request_confirmation` call and the run pauses;
 *   - a user text `ticket <what>` -> one function call
 *     `open_ticket({what})`, a long-running tool: it answers
 *     `{status: "pending"}` and the run pauses until the caller sends the
 *     tool's response;
 *   - the last content is a function response -> the text
 *     `<tool>: <the response as JSON>` (for a rejected transfer, the
 *     error ADK put there).
 */
import {
  BaseLlm,
  FunctionTool,
  LlmAgent,
  LongRunningFunctionTool,
  type BaseLlmConnection,
  type LlmRequest,
  type LlmResponse,
} from '@google/adk';
import type { Content, Part } from '@google/genai';
import { z } from 'zod';

const transferMoney = new FunctionTool({
  name: 'transfer_money',
  description: 'Transfers an amount; a person must approve it first.',
  parameters: z.object({ amount: z.number() }),
  requireConfirmation: true,
  execute: ({ amount }) => ({ transferred: amount }),
});

const openTicket = new LongRunningFunctionTool({
  name: 'open_ticket',
  description: 'Opens a ticket that a person resolves later.',
  parameters: z.object({ what: z.string() }),
  execute: () => ({ status: 'pending' }),
});

function partsOf(content: Content | undefined): Part[] {
  return content?.parts ?? [];
}

class OfflineTransferLlm extends BaseLlm {
  constructor() {
    super({ model: 'offline-transfer' });
  }

  async *generateContentAsync(
    llmRequest: LlmRequest,
  ): AsyncGenerator<LlmResponse, void> {
    const contents = llmRequest.contents ?? [];
    const last = contents[contents.length - 1];
    const parts = partsOf(last);

    const fnResponse = parts.find((p) => p.functionResponse)?.functionResponse;
    if (fnResponse) {
      yield {
        content: {
          role: 'model',
          parts: [
            {
              text: `${fnResponse.name}: ${JSON.stringify(fnResponse.response ?? {})}`,
            },
          ],
        },
        partial: false,
        turnComplete: true,
      };
      return;
    }

    const userText = parts
      .map((p) => p.text ?? '')
      .join('')
      .trim();
    const [verb, ...rest] = userText.split(' ');
    const call =
      verb === 'approve'
        ? { name: 'transfer_money', args: { amount: Number(rest[0] ?? 0) } }
        : { name: 'open_ticket', args: { what: rest.join(' ') } };
    yield {
      content: { role: 'model', parts: [{ functionCall: call }] },
      partial: false,
      turnComplete: true,
    };
  }

  async connect(_llmRequest: LlmRequest): Promise<BaseLlmConnection> {
    throw new Error('OfflineTransferLlm does not support live connections.');
  }
}

export const rootAgent = new LlmAgent({
  name: 'transfer',
  description: 'Transfers money and opens tickets (offline test agent).',
  instruction: 'Use the tools.',
  model: new OfflineTransferLlm(),
  tools: [transferMoney, openTicket],
});
