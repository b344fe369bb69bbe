import { DOCUMENT_TEXT_MAX_CHARS } from '../src/core/attachments.js';
import { supportsVision } from '../src/core/models.js';
import type { Logger } from '../src/log.js';
import { createTranscriber } from '../src/llm/transcribe.js';
import type { BudgetGuard } from '../src/budget/guard.js';
import type { RedisClient } from '../src/redis/client.js';
import { createAttachmentReader, type AttachmentReader } from './attachments.js';
import type { ResolvedRunWorkerOptions } from './worker-options.js';

/**
 * The worker's attachment reader from its options: images sent when the model sees them (the
 * table of known vision models, or `attachments.vision`), voice transcribed when
 * `attachments.transcribeModel` is set (same endpoint and key as the agent), documents bounded
 * by {@link documentBudget}.
 */
export function createWorkerAttachments(deps: { redis: RedisClient; logger: Logger; budget?: Pick<BudgetGuard, 'transcriber'> }, o: ResolvedRunWorkerOptions): AttachmentReader {
  const model = o.attachments?.transcribeModel;
  const plain = model ? createTranscriber({ baseURL: o.llm.baseURL, apiKey: o.llm.apiKey, model, timeoutMs: o.llm.timeoutMs }) : undefined;
  // Transcriptions are model calls: reserved and settled like the agent's when budgets are on.
  const transcriber = plain && deps.budget ? deps.budget.transcriber(plain) : plain;
  return createAttachmentReader(
    { redis: deps.redis, keyPrefix: o.keyPrefix, log: deps.logger, ...(transcriber ? { transcriber } : {}) },
    { vision: supportsVision(o.llm.model, o.attachments?.vision), maxDocumentChars: documentBudget(o.contextWindow) },
  );
}

/** Share of the context window the documents of one message may take (as tool results: a quarter). */
const DOCUMENT_WINDOW_SHARE = 0.25;

/**
 * Characters the documents of one message may give the model: {@link DOCUMENT_TEXT_MAX_CHARS}, or a
 * quarter of the window at 3 characters a token when that is less (an 8k window: 6,144).
 */
export function documentBudget(contextWindow: number): number {
  return Math.min(DOCUMENT_TEXT_MAX_CHARS, Math.floor(contextWindow * DOCUMENT_WINDOW_SHARE * 3));
}
