/**
 * The idle compaction's decision (layer `idle`): a session that went quiet is compacted in the
 * background when its next request is expected at or over the in-loop line, so the next message
 * does not wait for a summariser.
 */
import { HYGIENE_MIN_MESSAGES } from './hygiene.js';

/** How long a session must be quiet before it is compacted in the background, seconds. */
export const DEFAULT_IDLE_COMPACT_SECONDS = 60;

/** Input of {@link decideIdleCompaction}. */
export interface IdleCompactionInput {
  /** Messages in the session's projection. */
  messageCount: number;
  /** The session's request as it stands (the last reported prompt plus what was appended since), tokens. */
  requestTokens: number;
  /**
   * What the next turn is expected to add before its model calls, tokens: the growth of the last turn
   * (its user message, tool rounds and answer). The next request is `requestTokens + expectedGrowthTokens`.
   */
  expectedGrowthTokens: number;
  contextWindow: number;
  /** The in-loop trigger as a share of (window − reserve). */
  threshold: number;
  /** Output reserve subtracted from the window before the threshold. Default 0. */
  reservedOutputTokens?: number;
}

/**
 * Whether the session's next request is expected at or over the in-loop line, so compacting now,
 * while nobody waits, spares the next turn its compaction. @returns the decision and the next request.
 */
export function decideIdleCompaction(input: IdleCompactionInput): { compact: boolean; nextRequestTokens: number } {
  const thresholdTokens = Math.floor((input.contextWindow - (input.reservedOutputTokens ?? 0)) * input.threshold);
  const nextRequestTokens = input.requestTokens + Math.max(0, input.expectedGrowthTokens);
  return { compact: input.messageCount >= HYGIENE_MIN_MESSAGES && nextRequestTokens >= thresholdTokens, nextRequestTokens };
}
