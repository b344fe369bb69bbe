import type { ChatMessage } from './messages.js';

/** What the summariser is asked to do for one compaction. */
export interface SummaryRequest {
  /** The middle being compacted (summary messages excluded), already pruned. */
  turns: ChatMessage[];
  /** Body of the summary already in the history, if any: update it, do not start again. */
  previousSummary: string | null;
  /** What the user asked the summary to focus on (`/compact <focus>`). */
  focus?: string;
  /** Token budget: max(2000, min(0.20 × middle tokens, min(0.05 × window, 12000))). */
  targetTokens: number;
}

/** Tokens a summariser call used, as its provider reported them. */
export interface SummaryUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens?: number;
}

/** A summary with the usage of the call that wrote it. */
export interface SummaryOutput {
  text: string;
  usage?: SummaryUsage;
}

/**
 * Writes the handoff summary of a compaction: the text, or the text with its usage (so the
 * session's ledger can account for it). Throwing or answering empty triggers the fallback.
 */
export interface Summarizer {
  summarize(request: SummaryRequest): Promise<string | SummaryOutput>;
}

/** How a compaction ended. */
export type CompactionOutcome = 'compacted' | 'pruned' | 'fallback' | 'noop' | 'aborted';

/**
 * Per-session compaction state. Plain JSON, so any worker can load it from Redis and carry on.
 * Create one with `createCompactionState()`; never edit it by hand.
 */
export interface CompactionState {
  version: 1;
  /** Compactions that changed the projection (any outcome but noop/aborted). */
  compactions: number;
  /** Compactions in a row whose result was still at or over the trigger. */
  ineffectiveStreak: number;
  /** Automatic compaction at the trigger is paused (two ineffective in a row); the hard limit still acts. */
  paused: boolean;
  /** Consecutive summariser failures. */
  summarizerFailures: number;
  /** Until when (ms since epoch) the summariser is not called after a failure; `force` bypasses. */
  cooldownUntilMs: number;
  /** The failure behind the cool-down was an unreachable or refusing summariser: compactions abort until it ends. */
  cooldownAborts: boolean;
  /** The fact ledger: strong identifier → logical time it was last seen (higher is newer). */
  facts: Record<string, number>;
  /** Logical clock for the ledger; grows with every message mined. */
  factClock: number;
  /** Ledger facts that were missing from the request but left out of the last pinned section. */
  pinsOmitted: number;
  /** Outcome of the last compaction, or null before the first. */
  lastOutcome: CompactionOutcome | null;
}

/** Options of one `compress()` call. */
export interface CompressOptions {
  /** Size of the next request as last reported by the provider plus what was appended since (tokens). */
  requestTokens?: number;
  /** Passed to the summariser. */
  focus?: string;
  /** Compact even below the trigger, while paused and during the summariser cool-down. */
  force?: boolean;
  /** The session's state; default: the state this compressor kept from its previous call. */
  state?: CompactionState;
}

/** The result of one `compress()` call. The input is never mutated. */
export interface CompactionResult {
  /** The new projection. */
  messages: ChatMessage[];
  outcome: CompactionOutcome;
  /** The summary text now in `messages`, if any. */
  summary: string | null;
  /** Tokens of the input messages (framing included). */
  tokensBefore: number;
  /** Tokens of the output messages (framing included). */
  tokensAfter: number;
  /** Identifiers the verifier pinned because the summary and the tail had lost them. */
  pinnedFacts: string[];
  /** The updated state to store with the session. */
  state: CompactionState;
  /** True exactly once: when this call paused automatic compaction (tell the user). */
  pausedNow: boolean;
  /** Why it ended the way it did, for logs and chat replies. */
  reason: string;
  /** Milliseconds the summariser took (0 when not called). */
  summarizerMs: number;
  /** Tokens the summariser reported using, when it was called and reported them. */
  summarizerUsage?: SummaryUsage;
}
