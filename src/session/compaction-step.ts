import type { ContextCompressor } from '../core/compaction/compressor.js';
import type { CompactionResult } from '../core/compaction/compaction-types.js';
import type { ChatMessage } from '../core/messages.js';
import type { CompactionLayer } from '../core/session-figures.js';
import type { Logger } from '../log.js';
import { toEntry } from '../redis/session-store.js';
import type { TranscriptCompaction } from '../redis/transcript.js';
import { compactionUsageDelta, mergeUsage, summaryUsageDelta, type PriceTable, type UsageDelta } from '../redis/usage.js';
import { StaleCommitError } from '../errors.js';
import { NOOP_METRICS, type Metrics } from '../metrics.js';
import type { TurnState } from './turn-state.js';

/** What one compaction step needs. */
export interface CompactionStepInput {
  compressor: ContextCompressor;
  turn: TurnState;
  /** System prompt (first message of every request; protected head). */
  system: ChatMessage;
  /** Tokens of the next request as the ledger knows it (overhead included). */
  requestTokens: number;
  layer: CompactionLayer;
  force: boolean;
  focus?: string;
  /**
   * Messages about to join the projection (the gateway's view of the inbox): compacted as if present,
   * so the exchange before them may be summarised, then left out of the commit.
   */
  pending?: ChatMessage[];
  /** Commit a `noop`/`aborted` outcome (its transcript event and counters). Default true. */
  commitNoop?: boolean;
  /** Price overrides for the summary model's cost. */
  prices?: PriceTable;
  /** Model that writes summaries (recorded in the transcript). */
  summaryModel: string;
  model?: string;
  logger: Logger;
  /** Where the compaction is counted. Default {@link NOOP_METRICS}. */
  metrics?: Metrics;
  /**
   * A notice to keep for the session's next reply (meta `heldNotices`), committed with the rewrite
   * of the projection; null: none. For a compaction nobody waits for (layer `idle`).
   */
  heldNotice?: (result: CompactionResult) => string | null;
  /** The session's `remember` notes, recorded with a rewrite of the projection (`notesSnapshot`, shown in later requests). */
  notes?: () => Promise<Record<string, string>>;
}

/**
 * Runs the compressor on system prompt + projection and commits the outcome atomically: the new
 * projection (unless noop/aborted), the compaction state, a `compaction` transcript event and
 * the ledger counters. @throws StaleCommitError when the lease was lost.
 */
export async function runCompactionStep(input: CompactionStepInput): Promise<CompactionResult> {
  const { turn, system, layer } = input;
  const startedMs = Date.now();
  const pending = input.pending ?? [];
  const compressed = await input.compressor.compress([system, ...turn.messages(), ...pending], {
    requestTokens: input.requestTokens, force: input.force, focus: input.focus, state: turn.compaction, scope: turn.callScope,
  });
  // The compressor keeps the latest user messages verbatim and last: the pending ones come off again.
  const result = pending.length === 0 ? compressed : { ...compressed, messages: compressed.messages.slice(0, compressed.messages.length - pending.length) };
  const durationMs = Date.now() - startedMs;
  const event: TranscriptCompaction = {
    type: 'compaction', layer, outcome: result.outcome, tokensBefore: result.tokensBefore, tokensAfter: result.tokensAfter,
    requestTokens: input.requestTokens, model: input.summaryModel, durationMs, reason: result.reason, atMs: Date.now(),
  };
  const summary = result.summarizerUsage;
  const summaryUsage = summary ? summaryUsageDelta(input.summaryModel, { promptTokens: summary.promptTokens, completionTokens: summary.completionTokens, cachedTokens: summary.cachedTokens ?? 0 }, input.prices) : null;
  const usage = mergeUsage(
    compactionUsageDelta(layer, result.outcome, result.tokensBefore - result.tokensAfter, { model: input.model ?? input.summaryModel, prices: input.prices }),
    ...(summaryUsage ? [summaryUsage] : []),
  );
  try {
    await commitStep(input, result, event, usage);
  } catch (err) {
    // Refused (the lease went elsewhere, e.g. to a message's turn): the summary was paid for all the same.
    if (err instanceof StaleCommitError && summaryUsage) {
      await turn.addUsage(summaryUsage).then(
        () => input.logger.info({ layer, summaryPromptTokens: summary!.promptTokens, summaryCompletionTokens: summary!.completionTokens }, 'compaction not committed; its summary counted'),
        (countErr: unknown) => input.logger.warn({ err: countErr, layer }, 'compaction not committed; its summary could not be counted'),
      );
    }
    throw err;
  }
  (input.metrics ?? NOOP_METRICS).record({ type: 'compaction', layer, outcome: result.outcome, tokensBefore: result.tokensBefore, tokensAfter: result.tokensAfter });
  input.logger.info({
    layer, outcome: result.outcome, tokensBefore: result.tokensBefore, tokensAfter: result.tokensAfter,
    requestTokens: input.requestTokens, durationMs, reason: result.reason,
  }, 'compaction');
  return result;
}

/** Commits a compaction's outcome: the counters and event alone for a noop or aborted one, else the new projection with them. */
async function commitStep(input: CompactionStepInput, result: CompactionResult, event: TranscriptCompaction, usage: UsageDelta): Promise<void> {
  const { turn, system } = input;
  if (result.outcome === 'noop' || result.outcome === 'aborted') {
    if (input.commitNoop !== false || result.outcome === 'aborted') await turn.commitOnly({ transcript: [event], usage, meta: { compaction: result.state } });
    return;
  }
  const kept = result.messages.filter((message, index) => !(index === 0 && message.role === 'system' && message.content === system.content));
  const held = input.heldNotice?.(result);
  const meta = { ...(input.notes ? { notesSnapshot: await input.notes() } : {}), ...(held ? { heldNotices: [...turn.meta.heldNotices, held] } : {}) };
  await turn.replace(kept.map((message) => toEntry(message, input.compressor.tokenCounter, input.model)), result.state, { transcript: [event], usage, meta });
}
