import type { CompactionState } from '../core/compaction/compaction-types.js';
import type { OutboundMessage } from '../core/inbound.js';
import type { ChatMessage } from '../core/messages.js';
import type { SessionLimits } from '../core/session-figures.js';
import type { TokenCounter } from '../core/tokens.js';
import { REPLY_PRIMING_TOKENS } from '../core/token-framing.js';
import { StaleCommitError } from '../errors.js';
import type { Logger } from '../log.js';
import { createSilentLogger } from '../log.js';
import type { RedisClient } from './client.js';
import { DEFAULT_KEY_PREFIX, sessionIndexKey, sessionKeys, usageRollupKey, type SessionKeys } from './keys.js';
import { runScriptWithOptions } from './scripts.js';
import { DEFAULT_TRANSCRIPT_RETENTION, type TranscriptEntry } from './transcript.js';
import { bucketOf, DEFAULT_DAILY_DAYS, DEFAULT_HOURLY_DAYS, ROLLUP_FORMAT, rollupFields, type RollupBucket } from '../usage/rollup-format.js';
import type { UsageDelta } from './usage.js';

/** A projection message stored with its token count (counted once, when stored). */
export interface StoredEntry {
  message: ChatMessage;
  tokens: number;
}

/** Where a session's replies go. */
export interface SessionRoute {
  channel: OutboundMessage['channel'];
  chatId: string;
  threadId?: string;
}

/** The meta hash of a session, parsed. */
export interface SessionMeta {
  /** Grows by one with every commit; commits compare-and-set on it. */
  version: number;
  compaction: CompactionState | null;
  /** Prompt tokens the provider reported for the last call since the last rewrite; 0 = no report. */
  lastPromptTokens: number;
  /** Counted tokens of what was appended to the request since that report. */
  appendedTokensSince: number;
  /** Tokens of the request outside the projection (system prompt, notes, tool schemas) at last count. */
  overheadTokens: number;
  /** Sum of the stored entries' token counts. */
  projectionTokens: number;
  /** Inbound ids the running turn has already put in the projection (crash recovery). */
  turnInboundIds: string[];
  route: SessionRoute | null;
  /** The model, window and output reserve the session last ran with (null until a worker or the gateway wrote them). */
  limits: SessionLimits | null;
  lastActivityMs: number;
  /** First commit, ms since epoch (0 before it). */
  createdAtMs: number;
  /**
   * The `remember` notes as of the last rewrite of the projection (compaction or reset), which the
   * request shows; between rewrites the remember/forget calls in the history carry the changes, so
   * the request's prefix stays the same. Null before the first rewrite that recorded them.
   */
  notesSnapshot: Record<string, string> | null;
  /**
   * Notices for the user kept for the session's next reply (an idle compaction's: nobody was there
   * to read it). The turn that replies sends them after its reply and clears them in the same commit.
   */
  heldNotices: string[];
}

/** A session as loaded from Redis. */
export interface SessionSnapshot {
  sessionId: string;
  entries: StoredEntry[];
  meta: SessionMeta;
}

/** Meta fields a commit may set. */
export type MetaUpdate = Partial<Pick<SessionMeta, 'compaction' | 'lastPromptTokens' | 'appendedTokensSince' | 'overheadTokens' | 'turnInboundIds' | 'route' | 'limits' | 'notesSnapshot' | 'heldNotices'>>;

/** One atomic change to a session. */
export interface CommitChange {
  /** The version the change was computed from. */
  expectedVersion: number;
  /** Fencing token of the lease the writer holds. */
  fence: number;
  /** Replace the projection, append to it, or leave it. */
  projection?: { replace: StoredEntry[] } | { append: StoredEntry[] };
  transcript?: TranscriptEntry[];
  meta?: MetaUpdate;
  usage?: UsageDelta;
  /** Who the usage is for in the rollups, `<channel>:<userId>` (the turn's last sender); none: ''. */
  user?: string;
  /** The turn is done: delete the processing list. */
  finishTurn?: boolean;
  /** Replies to enqueue after the commit (kept in the outbox until they are). */
  outbox?: OutboundMessage[];
}

/** Dependencies of {@link createSessionStore}. */
export interface SessionStoreDeps {
  redis: RedisClient;
  logger?: Logger;
  /** Told of each change once it is committed, and of usage added outside a commit (src/usage counts its usage in the metrics). Must not throw. */
  onCommitted?: (sessionId: string, change: Pick<CommitChange, 'usage' | 'user'>) => void;
}

/** Options of {@link createSessionStore}. */
export interface SessionStoreOptions {
  /** Key prefix. Default `cg:`. */
  keyPrefix?: string;
  /** Approximate maximum transcript entries per session (XADD MAXLEN ~); 0 = unbounded. Default {@link DEFAULT_TRANSCRIPT_RETENTION}. */
  transcriptRetention?: number;
  /** Days the usage rollups are kept: hourly (default 14) and daily (default 400). */
  usageRetention?: UsageRetention;
  now?: () => number;
}

/** How long the usage rollups are kept, in days after their hour or day. */
export interface UsageRetention {
  hourlyDays: number;
  dailyDays: number;
}

// Defined in ./transcript.js so the configuration reads it without loading the tokenizer.
export { DEFAULT_TRANSCRIPT_RETENTION };

const DEFAULTS = {
  keyPrefix: DEFAULT_KEY_PREFIX, transcriptRetention: DEFAULT_TRANSCRIPT_RETENTION,
  usageRetention: { hourlyDays: DEFAULT_HOURLY_DAYS, dailyDays: DEFAULT_DAILY_DAYS }, now: Date.now,
} satisfies Required<SessionStoreOptions>;

/** Session persistence: load, atomic fenced commit, outbox. */
export interface SessionStore {
  readonly keyPrefix: string;
  keys(sessionId: string): SessionKeys;
  load(sessionId: string): Promise<SessionSnapshot>;
  /**
   * Applies `change` atomically, only if the version and the fencing token still match.
   * @returns the new version. @throws StaleCommitError when refused (nothing is applied).
   */
  commit(sessionId: string, change: CommitChange): Promise<number>;
  /**
   * Adds `usage` to the session's ledger and its rollups (for `user`, `<channel>:<userId>`; none: '')
   * outside a commit, unfenced: for model calls whose work is not committed. Its `set` fields are ignored.
   */
  addUsage(sessionId: string, usage: UsageDelta, user?: string): Promise<void>;
  /** Pending replies committed but not yet enqueued. */
  readOutbox(sessionId: string): Promise<OutboundMessage[]>;
  /** Removes replies that were enqueued. */
  clearOutbox(sessionId: string, count: number): Promise<void>;
}

/** Wraps a message with its token count, as `counter` counts it for `model`. */
export function toEntry(message: ChatMessage, counter: TokenCounter, model?: string): StoredEntry {
  return { message, tokens: counter.messageTokens(message, model) };
}

/**
 * Size of the session's next request in tokens: the last provider-reported prompt tokens plus
 * what was appended since; with no report yet, a full count from the stored per-message counts
 * plus the overhead (system prompt, notes, tool schemas). Used by both compaction layers.
 */
export function requestTokens(session: Pick<SessionSnapshot, 'meta'>, overheadTokens?: number): number {
  const meta = session.meta;
  const overheadDelta = overheadTokens === undefined ? 0 : overheadTokens - meta.overheadTokens;
  if (meta.lastPromptTokens > 0) return meta.lastPromptTokens + meta.appendedTokensSince + overheadDelta;
  return REPLY_PRIMING_TOKENS + meta.projectionTokens + (overheadTokens ?? meta.overheadTokens);
}

/** Creates the Redis session store. */
export function createSessionStore(deps: SessionStoreDeps, options: SessionStoreOptions = {}): SessionStore {
  const resolved = { ...DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) } as Required<SessionStoreOptions>;
  const { redis } = deps;
  const log = (deps.logger ?? createSilentLogger()).child({ component: 'session-store' });
  const keysOf = (sessionId: string): SessionKeys => sessionKeys(sessionId, resolved.keyPrefix);
  const index = indexRefresh();
  const buckets = currentBuckets();
  return {
    keyPrefix: resolved.keyPrefix,
    keys: keysOf,
    async load(sessionId) {
      const keys = keysOf(sessionId);
      const [rawEntries, rawMeta] = await Promise.all([redis.lrange(keys.history, 0, -1), redis.hgetall(keys.meta)]);
      return { sessionId, entries: rawEntries.map((raw) => JSON.parse(raw) as StoredEntry), meta: parseMeta(rawMeta) };
    },
    async commit(sessionId, change) {
      const keys = keysOf(sessionId);
      const nowMs = resolved.now();
      const rollupBuckets = buckets(nowMs);
      const { options: commitOptions, items } = commitArgs(change, resolved.transcriptRetention, nowMs, rollupBuckets, resolved.usageRetention);
      const committing = runScriptWithOptions(redis, 'commitSession', commitKeys(keys, sessionId, resolved.keyPrefix, rollupBuckets), commitOptions, items) as Promise<string[]>;
      // Sent with the commit, in its socket write (another slot on a cluster: not inside the script); a refused commit's score is harmless.
      const indexing = index.due(sessionId, nowMs) ? redis.zadd(sessionIndexKey(resolved.keyPrefix), nowMs, sessionId) : null;
      const reply = await committing.catch(async (err: unknown) => {
        await indexing?.catch(() => undefined);
        throw err;
      });
      if (Number(reply[0]) !== 1) {
        await indexing?.catch(() => undefined);
        log.warn({ sessionId, reason: reply[1], current: reply[2], expectedVersion: change.expectedVersion, fence: change.fence }, 'stale commit refused');
        throw new StaleCommitError(sessionId, `${reply[1]} mismatch (expected ${reply[1] === 'version' ? change.expectedVersion : change.fence}, found ${reply[2]})`);
      }
      if (indexing) {
        await indexing;
        index.done(sessionId, nowMs);
      }
      deps.onCommitted?.(sessionId, change);
      return Number(reply[1]);
    },
    async addUsage(sessionId, usage, user) {
      const nowMs = resolved.now();
      const rollupBuckets = buckets(nowMs);
      const rollup = rollupArgs({ usage, user }, rollupBuckets, resolved.usageRetention);
      // The usage read model finds a session's rollups through the session index: keep its score fresh, as a commit does.
      await Promise.all([
        runScriptWithOptions(redis, 'addUsage', [keysOf(sessionId).usage, ...rollupKeys(sessionId, resolved.keyPrefix, rollupBuckets)], { usageIncr: usage.incr, rollup }),
        redis.zadd(sessionIndexKey(resolved.keyPrefix), nowMs, sessionId),
      ]);
      deps.onCommitted?.(sessionId, { usage, user });
    },
    async readOutbox(sessionId) {
      const raw = await redis.lrange(keysOf(sessionId).outbox, 0, -1);
      return raw.map((item) => JSON.parse(item) as OutboundMessage);
    },
    async clearOutbox(sessionId, count) {
      if (count > 0) await redis.ltrim(keysOf(sessionId).outbox, count, -1);
    },
  };
}

/** How stale a session's score in the session index may get through this store's commits, ms. */
const INDEX_REFRESH_MS = 1000;

/**
 * When a commit also updates the session index (sessions by last activity): unless this store did
 * so for the session less than {@link INDEX_REFRESH_MS} ago — the commits of one turn come
 * milliseconds apart, and the listing's order needs no finer time (the meta's `lastActivityMs` is exact).
 */
function indexRefresh(): { due(sessionId: string, nowMs: number): boolean; done(sessionId: string, nowMs: number): void } {
  const indexedAt = new Map<string, number>();
  return {
    due(sessionId, nowMs) {
      const age = nowMs - (indexedAt.get(sessionId) ?? Number.NEGATIVE_INFINITY);
      return !(age >= 0 && age < INDEX_REFRESH_MS);
    },
    done(sessionId, nowMs) {
      indexedAt.set(sessionId, nowMs);
      if (indexedAt.size <= 10_000) return;
      for (const [id, at] of indexedAt) if (nowMs - at >= INDEX_REFRESH_MS) indexedAt.delete(id);
      if (indexedAt.size > 10_000) indexedAt.clear();
    },
  };
}

/** The rollup buckets (hour and day) holding a commit's time. */
interface CommitBuckets {
  hour: RollupBucket;
  day: RollupBucket;
}

/** The buckets of `nowMs`, worked out again only when the hour changes (every commit asks). */
function currentBuckets(): (nowMs: number) => CommitBuckets {
  let last: CommitBuckets | null = null;
  return (nowMs) => {
    const holds = (bucket: RollupBucket) => nowMs >= bucket.startMs && nowMs < bucket.endMs;
    if (!last || !holds(last.hour) || !holds(last.day)) last = { hour: bucketOf('hour', nowMs), day: bucketOf('day', nowMs) };
    return last;
  };
}

function commitKeys(keys: SessionKeys, sessionId: string, prefix: string, buckets: CommitBuckets): string[] {
  return [keys.history, keys.transcript, keys.meta, keys.usage, keys.lease, keys.processing, keys.outbox, ...rollupKeys(sessionId, prefix, buckets)];
}

/** The session's usage rollup keys of the hour and the day. */
function rollupKeys(sessionId: string, prefix: string, buckets: CommitBuckets): string[] {
  return [buckets.hour, buckets.day].map((bucket) => usageRollupKey(sessionId, bucket.period, bucket.label, prefix));
}

/** The rollup part of a commit's options: the counters and when the hour's and the day's hashes expire. */
function rollupArgs(change: Pick<CommitChange, 'usage' | 'user'>, buckets: CommitBuckets, retention: UsageRetention): object | undefined {
  const fields = rollupFields(change.usage?.rollup ?? {}, change.user ?? '');
  if (Object.keys(fields).length === 0) return undefined;
  const dayMs = 86_400_000;
  const expireAtMs = [buckets.hour.endMs + retention.hourlyDays * dayMs, buckets.day.endMs + retention.dailyDays * dayMs];
  return { format: ROLLUP_FORMAT, fields, expireAtMs };
}

/** The commit script's options (one JSON argument) and its items (src/redis/scripts/commit-session-9.lua). */
function commitArgs(change: CommitChange, retention: number, nowMs: number, buckets: CommitBuckets, usageRetention: UsageRetention): { options: object; items: string[] } {
  const projection = change.projection;
  const mode = !projection ? 'none' : 'replace' in projection ? 'replace' : 'append';
  const entries = !projection ? [] : 'replace' in projection ? projection.replace : projection.append;
  const transcript = change.transcript ?? [];
  const outbox = change.outbox ?? [];
  const options = {
    expectedVersion: change.expectedVersion, fence: String(change.fence), mode,
    projectionTokens: entries.reduce((sum, entry) => sum + entry.tokens, 0), transcriptRetention: retention,
    meta: serializeMeta(change.meta ?? {}), usageIncr: change.usage?.incr ?? {}, usageSet: change.usage?.set ?? {},
    finishTurn: change.finishTurn === true, nowMs, entries: entries.length, transcript: transcript.length, outbox: outbox.length,
    rollup: rollupArgs(change, buckets, usageRetention),
  };
  const items = [...entries, ...transcript, ...outbox].map((item) => JSON.stringify(item));
  return { options, items };
}

function serializeMeta(meta: MetaUpdate): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, value] of Object.entries(meta)) {
    if (value !== undefined) out[field] = typeof value === 'number' ? String(value) : JSON.stringify(value);
  }
  return out;
}

/** Parses a session's meta hash (missing fields read as zero/empty). */
export function parseMeta(raw: Record<string, string>): SessionMeta {
  // Module-level readers, not closures: this runs on every load, and a closure per field was a visible share of it.
  return {
    version: numberField(raw, 'version'),
    compaction: jsonField<CompactionState | null>(raw, 'compaction', null),
    lastPromptTokens: numberField(raw, 'lastPromptTokens'),
    appendedTokensSince: numberField(raw, 'appendedTokensSince'),
    overheadTokens: numberField(raw, 'overheadTokens'),
    projectionTokens: numberField(raw, 'projectionTokens'),
    turnInboundIds: jsonField<string[]>(raw, 'turnInboundIds', []),
    route: jsonField<SessionRoute | null>(raw, 'route', null),
    limits: jsonField<SessionLimits | null>(raw, 'limits', null),
    lastActivityMs: numberField(raw, 'lastActivityMs'),
    createdAtMs: numberField(raw, 'createdAtMs'),
    notesSnapshot: jsonField<Record<string, string> | null>(raw, 'notesSnapshot', null),
    heldNotices: jsonField<string[]>(raw, 'heldNotices', []),
  };
}

function jsonField<T>(raw: Record<string, string>, field: string, fallback: T): T {
  const value = raw[field];
  return value ? (JSON.parse(value) as T) : fallback;
}

function numberField(raw: Record<string, string>, field: string): number {
  return Number(raw[field] ?? 0);
}
