/**
 * Offline test agent for parts that are not text (docs/parts.md).
 *
 * App name: `picture` (the directory name). Served by
 * `@google/adk-devtools` `api_server` via ../../start.sh.
 *
 * The model never touches the network. It answers the user's message with
 * one event: a text part naming each part of the message
 * (`text`, `image/png inline 96`, `file application/pdf https://…`), then
 * each inline part of the message echoed back as it came (the same
 * `inlineData`, the same base64), then, when a text part of the message is `draw`, a
 * 1x1 PNG of its own (`inlineData`, `displayName` `dot.png`).
 */
import {
  BaseLlm,
  LlmAgent,
  type BaseLlmConnection,
  type LlmRequest,
  type LlmResponse,
} from '@google/adk';
import type { Part } from '@google/genai';

const dot =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

class OfflinePictureLlm extends BaseLlm {
  constructor() {
    super({ model: 'offline-picture' });
  }

  async *generateContentAsync(
    llmRequest: LlmRequest,
    _stream = false,
  ): AsyncGenerator<LlmResponse, void> {
    const contents = llmRequest.contents ?? [];
    const parts: Part[] = contents[contents.length - 1]?.parts ?? [];
    const names = parts.map((p) => {
      if (p.inlineData) {
        return `${p.inlineData.mimeType} inline ${p.inlineData.data?.length ?? 0}`;
      }
      if (p.fileData) {
        return `file ${p.fileData.mimeType ?? ''} ${p.fileData.fileUri}`;
      }
      return 'text';
    });
    const out: Part[] = [{ text: names.join('; ') }];
    for (const p of parts) {
      if (p.inlineData) out.push({ inlineData: p.inlineData });
    }
    if (parts.some((p) => p.text?.trim() === 'draw')) {
      out.push({ inlineData: { mimeType: 'image/png', data: dot, displayName: 'dot.png' } });
    }
    yield {
      content: { role: 'model', parts: out },
      partial: false,
      turnComplete: true,
    };
  }

  async connect(_llmRequest: LlmRequest): Promise<BaseLlmConnection> {
    throw new Error('OfflinePictureLlm does not support live connections.');
  }
}

export const rootAgent = new LlmAgent({
  name: 'picture',
  description: 'Echoes the parts it is sent (offline test agent).',
  instruction: 'Describe the parts.',
  model: new OfflinePictureLlm(),
});
