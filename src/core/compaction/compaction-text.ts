import type { CompactionOutcome } from './compaction-types.js';
import { countOf } from '../plural.js';
import { formatTokens } from '../session-figures.js';

/** What a compaction answer is built from (a `CompactionResult`'s figures: the whole request, as the trigger measures it). */
export interface CompactionSummaryInput {
  outcome: CompactionOutcome;
  requestTokensBefore: number;
  requestTokensAfter: number;
  /** True when this compaction paused automatic compaction. */
  pausedNow?: boolean;
  /** The focus the user asked for, if any. */
  focus?: string;
}

/**
 * The plain-words answer to `/compact`: one sentence per outcome, figures with thousands
 * separators, e.g. `Compacted: 4,277 → 3,094 tokens. …` or `Nothing to compact yet — the
 * conversation is still short.` Provider error text never appears: the outcome says what
 * happened, the logs say why.
 */
export function describeCompaction(input: CompactionSummaryInput): string {
  const figures = `${formatTokens(input.requestTokensBefore)} → ${countOf(input.requestTokensAfter, 'token')}`;
  const focus = input.focus ? ` (focus: ${input.focus})` : '';
  const paused = input.pausedNow ? ' ' + PAUSED_SENTENCE : '';
  switch (input.outcome) {
    case 'compacted':
      return `Compacted${focus}: ${figures}. The earlier conversation is now a summary; identifiers it would have lost are pinned.${paused}`;
    case 'pruned':
      return `Compacted${focus}: ${figures}. Old tool output was shortened; no summary was needed.${paused}`;
    case 'fallback':
      return `Compacted${focus}: ${figures}. The summariser was unavailable, so a simple summary was built from the turns.${paused}`;
    case 'aborted':
      return 'Nothing was compacted: the summariser could not be reached, so the conversation was left as it was. Try again in a while.';
    case 'noop':
      return 'Nothing to compact yet — the conversation is still short.';
  }
}

/** Said once when automatic compaction pauses for a session. */
export const PAUSED_SENTENCE = 'Automatic compaction is paused for this conversation because it did not shrink it enough twice in a row. Use /compact <focus> or /new.';

/**
 * The one line a user sees after an automatic compaction (gateway hygiene or the worker's in-loop
 * compressor), e.g. `Compacted the earlier conversation to keep it within the model's window
 * (12,400 → 3,100 tokens).` Null for outcomes that changed nothing (`noop`, `aborted`).
 */
export function automaticCompactionNotice(input: Pick<CompactionSummaryInput, 'outcome' | 'requestTokensBefore' | 'requestTokensAfter'>): string | null {
  if (input.outcome === 'noop' || input.outcome === 'aborted') return null;
  return `Compacted the earlier conversation to keep it within the model's window (${formatTokens(input.requestTokensBefore)} → ${countOf(input.requestTokensAfter, 'token')}).`;
}
