import type { CallScope } from '../budget.js';
import type { ChatMessage } from '../messages.js';

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
  /**
   * The most salient ledger facts that occur in `turns` or in `previousSummary` (at most 30): each
   * should appear verbatim in the summary's references. Whatever the summary still loses is pinned.
   */
  mustKeep?: string[];
  /** Today's date (YYYY-MM-DD, UTC), so that done work reads as dated past events. */
  today?: string;
  /** Without a `focus`: what the conversation is about now, taken from the last few user messages. */
  autoFocus?: string;
  /** The latest user request inside the compacted part, which the engine adds to the summary verbatim. */
  latestRequest?: string;
  /** Whom the summariser's model call counts for in the budgets (from {@link CompressOptions.scope}). */
  scope?: CallScope;
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
  version: 2;
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
  /** The fact ledger: identifier → what is known of it (see `FactRecord`: recency, origin, uses, shape). */
  facts: FactLedger;
  /** Logical clock for the ledger; grows with every message mined. */
  factClock: number;
  /** Turns (user messages) mined so far: a fact used again in a later turn gains salience. */
  turnClock: number;
  /** Facts held by each `remember` key (always pinned until `forget`). */
  noteFacts: Record<string, string[]>;
  /**
   * How far the history has been mined: its first `count` messages, the last of which hashed to `hash`.
   * Between compactions a history only grows at its end, so the next compaction mines only what follows.
   */
  mined: { count: number; hash: string } | null;
  /**
   * The summary block this engine wrote last: its text's hash and length. Only a block that matches is
   * taken as a summary; text imitating the markers stays what it is.
   */
  summary: { hash: string; length: number } | null;
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
  /** Whom a summary's model call counts for (the session's user and chat, a turn's spend). */
  scope?: CallScope;
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
  /**
   * The whole request before and after (messages plus what surrounds them: tool schemas, notes),
   * the measure the trigger compares with its line: what the notices, the ledger and the dashboard show.
   */
  requestTokensBefore: number;
  requestTokensAfter: number;
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

/** How much a fact's shape says it is an identifier: 0 weak (timestamps, versions, code names, hashes), 1 medium, 2 strong. */
export type ShapeStrength = 0 | 1 | 2;

/** Where in its text a fact stood: running prose, a labelled value (`order: X`), or a bare token in code, logs or output. */
export type FactContext = 'prose' | 'labelled' | 'bare';

/** One identifier found in a text, with its shape strength and where it stood. */
export interface FoundFact {
  fact: string;
  shape: ShapeStrength;
  context: FactContext;
}

/** The facts of one message: those of its text and those of each tool call's arguments. */
export interface MessageScan {
  text: readonly FoundFact[];
  calls: ReadonlyArray<readonly [tool: string, facts: readonly FoundFact[]]>;
}

/**
 * Where a fact came from, weakest first: a bare token in tool output, code or logs; a labelled value
 * in a tool result; the assistant's text; a tool-call argument; the user's own words; a `remember` note.
 */
export const FactOrigin = { bare: 0, labelled: 1, assistant: 2, call: 3, user: 4, note: 5 } as const;
/** One of {@link FactOrigin}'s values. */
export type FactOrigin = (typeof FactOrigin)[keyof typeof FactOrigin];

/**
 * What the ledger knows of one fact, as a compact JSON tuple: the logical time it was last seen, the
 * turn it was last used in, its strongest origin, how many later turns used it again, its shape.
 */
export type FactRecord = [seen: number, turn: number, origin: FactOrigin, uses: number, shape: ShapeStrength];

/** The fact ledger of a session: fact → record. Plain JSON. */
export type FactLedger = Record<string, FactRecord>;

/** Names of the tools whose arguments are notes (always pinned) and that remove them. */
export interface NoteTools {
  remember: string;
  forget: string;
}

/** The ledger's clocks and note index, carried in the compaction state beside the ledger. */
export interface LedgerClock {
  /** Logical clock, one tick per message mined. */
  factClock: number;
  /** Turns mined so far (one per user message). */
  turnClock: number;
  /** Facts of each `remember` key, so that `forget` can release them. */
  noteFacts: Record<string, string[]>;
}

/** A message's facts with their origin and shape; `tool` names the tool whose arguments held it. */
export type MinedFacts = ReadonlyArray<readonly [fact: string, origin: FactOrigin, shape: ShapeStrength, tool?: string]>;
