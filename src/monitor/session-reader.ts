import type { CompactionOutcome } from '../core/compaction-types.js';
import type { ChannelName } from '../core/inbound.js';

/**
 * The read port of the monitor: what `/api/sessions`, the dashboard and `chatgate sessions` show.
 * The Redis session store implements it; {@link MemorySessionReader} is the test double.
 */

/** Which of the two triggers (or the reactive/manual paths) ran a compaction. */
export type CompactionLayer = 'in-loop' | 'hygiene' | 'reactive' | 'manual';

/** Sort keys of the session list. */
export type SessionSort = 'lastActivity' | 'fill';

/** The per-session usage ledger. Token figures are as the provider reported them. */
export interface SessionLedger {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens served from the provider's cache (a subset of `promptTokens`). */
  cachedTokens: number;
  /** Model calls. */
  calls: number;
  /** Estimated cost, USD (0 when the model has no known price). */
  costUsd: number;
  /** Compactions that ran, all layers and outcomes. */
  compactions: number;
  /** Compactions by layer, then by outcome. */
  compactionsByLayer: Partial<Record<CompactionLayer, Partial<Record<CompactionOutcome, number>>>>;
  /** Tokens removed from the projection by compaction, all time. */
  tokensRemoved: number;
  /** Size of the last request as billed (system + tools + messages), tokens. */
  lastPromptTokens: number;
}

/** One row of the sessions table. */
export interface SessionRow {
  /** Session key, e.g. `telegram:123`. */
  id: string;
  channel: ChannelName;
  /** Messages in the transcript (everything ever said, not only the projection). */
  messages: number;
  /** Current context size (last billed prompt plus appended since), tokens. */
  contextTokens: number;
  /** The model's context window, tokens. */
  contextWindow: number;
  /** `contextTokens / contextWindow` (may exceed 1 only on a bug). */
  fill: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  compactions: number;
  /** Last message or reply, ms since epoch. */
  lastActivityAt: number;
  /** Automatic compaction is paused (two ineffective compactions in a row). */
  paused: boolean;
}

/** Context size after one turn (or model call). */
export interface FillPoint {
  /** Turn number, from 1. */
  turn: number;
  /** ms since epoch. */
  at: number;
  tokens: number;
  /** `tokens / contextWindow`. */
  fill: number;
}

/** One compaction on the session's timeline. */
export interface CompactionEvent {
  /** Turn during (in-loop, reactive) or before (hygiene, manual) which it ran. */
  turn: number;
  /** ms since epoch. */
  at: number;
  layer: CompactionLayer;
  outcome: CompactionOutcome;
  tokensBefore: number;
  tokensAfter: number;
  durationMs: number;
  /** Summary model, when one was called. */
  model?: string;
  reason?: string;
}

/** A note the model kept with the `remember` tool. */
export interface SessionNote {
  key: string;
  text: string;
  /** ms since epoch. */
  at: number;
}

/** Everything the monitor shows about one session. */
export interface SessionDetail {
  session: SessionRow;
  ledger: SessionLedger;
  /** Where the dashboard draws the trigger lines, as fractions of the window (reserve already applied). */
  thresholds: { compress: number; hygiene: number };
  /** Oldest first. */
  fillHistory: FillPoint[];
  /** Oldest first. */
  compactions: CompactionEvent[];
  /** The current summary block's text, if the session has been compacted. */
  summary: string | null;
  /** Facts pinned by the last compaction. */
  pinnedFacts: string[];
  notes: SessionNote[];
  /**
   * Messages in the session's dead-letter list: turns that failed for good (`chatgate failed`
   * lists them, `chatgate retry` re-queues them). Absent means 0.
   */
  failed?: number;
}

/** Options of {@link SessionReader.listSessions}. */
export interface ListSessionsOptions {
  /**
   * Default `lastActivity`. An implementation may compute `fill` sorting and `channel` filters over
   * only its most recent sessions (the Redis reader: 5,000); the page then says `capped: true`.
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

/** Read access to sessions for the monitor and the CLI. */
export interface SessionReader {
  /** One page of sessions, sorted. */
  listSessions(options?: ListSessionsOptions): Promise<SessionPage>;
  /** Everything about one session, or null when there is no such session. */
  getSession(id: string): Promise<SessionDetail | null>;
}

/** Default page size of {@link SessionReader.listSessions}. */
export const DEFAULT_PAGE_SIZE = 50;

/** Sorts, filters and pages rows as {@link SessionReader.listSessions} specifies; for implementations. */
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
