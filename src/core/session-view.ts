import type { DecisionVia } from './approval.js';
import type { CompactionOutcome } from './compaction/compaction-types.js';
import type { ChannelName } from './inbound.js';
import type { CompactionLayer, ContextFigures, SessionLimits } from './session-figures.js';

/**
 * The one read model of a session: what `/usage`, `/status`, `/pins`, `chatgate sessions`,
 * `chatgate usage`, `/api/sessions` and the dashboard show. `src/redis` implements it
 * (`createRedisSessionView`); `MemorySessionView` (src/monitor) is the test double.
 * Every figure is computed with `src/core/session-figures.ts`, so all surfaces agree.
 */

/** Sort keys of the session list. */
export type SessionSort = 'lastActivity' | 'fill';

/** The per-session usage ledger. Token figures are as the provider reported them. */
export interface SessionLedger {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens served from the provider's cache (a subset of `promptTokens`). */
  cachedTokens: number;
  /** `cachedTokens ÷ promptTokens` (0..1): how much of what was sent a prompt cache served. */
  cacheShare: number;
  /** Model calls of the agent (summaries excluded). */
  calls: number;
  /** Estimated cost, USD, summaries included, of the priced calls. */
  costUsd: number;
  /** Calls of models without a price: their cost is unknown ("price unknown", never $0). */
  unpricedCalls: number;
  /** Compactions that changed the projection (`compacted`, `pruned`, `fallback`); no-ops and aborts are not counted. */
  compactions: number;
  /** Every compaction attempt by layer, then by outcome (no-ops and aborts included). */
  compactionsByLayer: Partial<Record<CompactionLayer, Partial<Record<CompactionOutcome, number>>>>;
  /** Tokens removed from the projection by compaction, all time. */
  tokensRemoved: number;
  /** Size of the last request as billed (system + tools + messages), tokens; 0 after a compaction or reset. */
  lastPromptTokens: number;
  /** Summariser calls and their tokens (their cost is in `costUsd`). */
  summaryCalls: number;
  summaryPromptTokens: number;
  summaryCompletionTokens: number;
  /** Times the session was reset (`/reset`, `chatgate reset`). */
  resets: number;
}

/** One row of the sessions table. */
export interface SessionRow {
  /** Session key, e.g. `telegram:123`. */
  id: string;
  channel: ChannelName;
  /** The session's main model (from its meta; the reader's default for sessions that never recorded one). */
  model: string;
  /** Messages in the transcript (everything ever said, not only the projection); compaction and reset events are not messages. */
  messages: number;
  /** Tokens of the next request (last billed prompt plus what was appended since). */
  contextTokens: number;
  /** The session model's context window, tokens. */
  contextWindow: number;
  /** `contextWindow − reservedOutputTokens`: what fill is measured against. */
  usableWindow: number;
  /** `contextTokens / usableWindow`. */
  fill: number;
  promptTokens: number;
  completionTokens: number;
  /** Estimated cost of the priced calls, USD. */
  costUsd: number;
  /** Calls of models without a price (as {@link SessionLedger.unpricedCalls}). */
  unpricedCalls: number;
  /** Compactions that changed the projection (as {@link SessionLedger.compactions}). */
  compactions: number;
  /** Last message or reply, ms since epoch. */
  lastActivityAt: number;
  /** Automatic compaction is paused (two ineffective compactions in a row). */
  paused: boolean;
}

/** The request size of one model call, as the provider billed it (an estimate when it reported none). */
export interface FillPoint {
  /** Model call number, from 1. */
  call: number;
  /** Turn number (a turn starts at a user message), from 1. */
  turn: number;
  /** ms since epoch. */
  at: number;
  tokens: number;
  /** `tokens / usableWindow`. */
  fill: number;
}

/** One compaction on the session's timeline. */
export interface CompactionEvent {
  /** Model calls before it: it sits between call `call` and call `call + 1`. */
  call: number;
  /** Turn during (in-loop, reactive) or before (hygiene, manual) which it ran. */
  turn: number;
  /** ms since epoch. */
  at: number;
  layer: CompactionLayer;
  outcome: CompactionOutcome;
  /** Message tokens before and after (system prompt and projection; tool schemas and notes not included). */
  tokensBefore: number;
  tokensAfter: number;
  /** Size of the whole request before it, tokens: what the trigger compared with its line (the chart and the table show it). */
  requestTokensBefore: number;
  /** Size of the whole next request after it, tokens (the chart's "size after" dot and the table's "after"). */
  requestTokensAfter: number;
  durationMs: number;
  /** Summary model, when one was configured. */
  model?: string;
  reason?: string;
}

/** A reset on the session's timeline (the projection emptied; the transcript keeps everything). */
export interface ResetEvent {
  /** Model calls before it. */
  call: number;
  turn: number;
  /** ms since epoch. */
  at: number;
  /** Messages that left the projection. */
  removedMessages: number;
}

/** A note the model kept with the `remember` tool (from the notes store). */
export interface SessionNote {
  key: string;
  text: string;
}

/** A tool the user approved "always in this chat" (the session's grants). */
export interface SessionGrant {
  tool: string;
  by: { userId: string; userName: string };
  /** ms since epoch. */
  atMs: number;
}

/** A tool call of one turn, as the transcript records it: what the model asked for and what the tool answered. */
export interface SessionToolCall {
  /** The turn it belongs to (1-based, counted as the fill history counts them). */
  turn: number;
  /** The model's id of the call. */
  callId: string;
  tool: string;
  /** The arguments as the model sent them (JSON text, cut to {@link TOOL_CALL_TEXT_MAX} code points). */
  args: string;
  /** What the tool answered (cut likewise); null while no result is recorded (the turn still runs, or waits on an approval). */
  result: string | null;
  /** When the model asked for it, ms since epoch. */
  atMs: number;
}

/** The longest arguments or result text a {@link SessionToolCall} carries, code points. */
export const TOOL_CALL_TEXT_MAX = 400;

/** A decision on a tool call the session asked about, as the transcript records it (its `approval` entry). */
export interface SessionDecision {
  approvalId: string;
  tool: string;
  /** The call's arguments as the model sent them (JSON text, bounded). */
  args: string;
  decision: 'approved' | 'denied' | 'expired';
  via: DecisionVia;
  /** Who decided (absent for `timeout`, `stop` and `reset`). */
  by?: { userId: string; userName: string };
  /** Approved "always in this chat". */
  always: boolean;
  /** ms since epoch. */
  atMs: number;
}

/** What the session is doing now (for `/status`). */
export interface SessionActivity {
  /** When the session was created, ms since epoch. */
  createdAt: number;
  /** Messages in the projection (what the model sees). */
  contextMessages: number;
  /** A worker or the gateway holds the session's lease (a turn or a compaction is running). */
  busy: boolean;
  /** Messages waiting in the inbox. */
  waiting: number;
}

/** Everything the surfaces show about one session. */
export interface SessionDetail {
  session: SessionRow;
  ledger: SessionLedger;
  /** The limits the session runs with (its meta's; the reader's defaults when it never recorded any). */
  limits: SessionLimits;
  /** The next request against the usable window, and both triggers on the same scale (`compressAt`, `hygieneAt`: e.g. 0.5 and 0.85). */
  context: ContextFigures;
  /** One point per model call, oldest first. */
  fillHistory: FillPoint[];
  /** Every compaction attempt, oldest first (no-ops and aborts included, marked by `outcome`). */
  compactions: CompactionEvent[];
  /** Oldest first. */
  resets: ResetEvent[];
  /** The current summary block's text, if the session has been compacted. */
  summary: string | null;
  /** Facts pinned in the current summary block. */
  pinnedFacts: string[];
  notes: SessionNote[];
  /** Tools approved "always in this chat", oldest first. Absent means none. */
  grants?: SessionGrant[];
  /** Decisions on asked tool calls, oldest first (those in the replayed transcript). Absent means none. */
  decisions?: SessionDecision[];
  /** The tool calls of the recent turns, oldest first (those in the replayed transcript). Absent means none. */
  toolCalls?: SessionToolCall[];
  activity: SessionActivity;
  /**
   * Messages in the session's dead-letter list: turns that failed for good (`chatgate failed`
   * lists them, `chatgate retry` re-queues them). Absent means 0.
   */
  failed?: number;
}

/** Options of {@link SessionView.listSessions}. */
export interface ListSessionsOptions {
  /**
   * Default `lastActivity`. An implementation may compute `fill` sorting and `channel` filters over
   * only its most recent sessions (the Redis view: 5,000); the page then says `capped: true`.
   */
  sort?: SessionSort;
  /** Default `desc` (most recent or fullest first). */
  order?: 'asc' | 'desc';
  /** Rows to skip. Default 0. */
  offset?: number;
  /** Page size. Default 50. */
  limit?: number;
  /** Only sessions of this channel. */
  channel?: ChannelName;
}

/** One page of sessions. */
export interface SessionPage {
  items: SessionRow[];
  /** Sessions matching the filter, all pages. */
  total: number;
  offset: number;
  limit: number;
  /**
   * Set when the list was computed over only the most recent sessions (an implementation's scan
   * cap for fill sorting or channel filters): older sessions are missing from `items` and `total`.
   */
  capped?: boolean;
}

/** Read access to sessions: the port every surface reads through. */
export interface SessionView {
  /** One page of sessions, sorted. */
  listSessions(options?: ListSessionsOptions): Promise<SessionPage>;
  /** Everything about one session, or null when there is no such session. */
  getSession(id: string): Promise<SessionDetail | null>;
}

/** Default page size of {@link SessionView.listSessions}. */
export const DEFAULT_PAGE_SIZE = 50;

/** Sorts, filters and pages rows as {@link SessionView.listSessions} specifies; for implementations. */
export function pageSessions(rows: readonly SessionRow[], options: ListSessionsOptions = {}): SessionPage {
  const sort = options.sort ?? 'lastActivity';
  const sign = (options.order ?? 'desc') === 'desc' ? -1 : 1;
  const offset = Math.max(0, options.offset ?? 0);
  const limit = Math.max(1, options.limit ?? DEFAULT_PAGE_SIZE);
  const filtered = options.channel ? rows.filter((row) => row.channel === options.channel) : [...rows];
  const key = (row: SessionRow) => (sort === 'fill' ? row.fill : row.lastActivityAt);
  filtered.sort((a, b) => sign * (key(a) - key(b)) || a.id.localeCompare(b.id));
  return { items: filtered.slice(offset, offset + limit), total: filtered.length, offset, limit };
}
