import type { ChainableCommander } from 'ioredis';
import { CHANNEL_NAMES, type ChannelName } from '../core/inbound.js';
import { stripUndefined } from '../core/option-checks.js';
import { cacheShareOf, contextFigures, usableWindowOf, effectiveCompactions, fillOf, type CompactionLayer, type SessionLimits } from '../core/session-figures.js';
import { findSummary as findEngineSummary } from '../core/compaction/summary-block.js';
import { toCompactionState } from '../core/compaction/compaction-state.js';
import { DEFAULT_COMPRESS_THRESHOLD, DEFAULT_HYGIENE_THRESHOLD } from '../core/compaction/hygiene.js';
import {
  DEFAULT_PAGE_SIZE, type ListSessionsOptions, type SessionDecision, type SessionDetail, type SessionGrant, type SessionLedger, type SessionPage, type SessionRow, type SessionView,
} from '../core/session-view.js';
import type { RedisClient } from './client.js';
import { DEFAULT_KEY_PREFIX, sessionIndexKey, sessionKeys, type SessionKeys } from './keys.js';
import { createSessionNotes } from './notes.js';
import { replayTranscript } from './session-replay.js';
import { createSessionStore, parseMeta, requestTokens, type SessionMeta, type StoredEntry } from './session-store.js';
import { readTranscript, type StoredTranscriptEntry, type TranscriptEntry } from './transcript.js';
import { parseUsage, readUsage, type UsageLedger } from './usage.js';

/** Options of {@link createRedisSessionView}. */
export interface RedisSessionViewOptions {
  /** Session key prefix. Default `cg:`. */
  keyPrefix?: string;
  /**
   * Context window, tokens, of sessions whose meta records no limits yet: a worker records the
   * limits it runs a session with at its first turn, so only sessions no turn ran for use these.
   */
  contextWindow: number;
  /** Output reserve of such sessions, tokens. Default 0. */
  reservedOutputTokens?: number;
  /** Model of such sessions. Default `unknown`. */
  model?: string;
  /** Summary model of such sessions. Default `model`. */
  summaryModel?: string;
  /** In-loop trigger as a share of (window − reserve). Default 0.5. */
  threshold?: number;
  /** Hygiene trigger as a share of (window − reserve). Default 0.85. */
  hygieneThreshold?: number;
  /**
   * Most recent sessions considered when the list is sorted by fill or filtered by channel (those
   * need every candidate's meta; sorting by last activity pages in Redis and has no cap). Older
   * sessions are left out of such lists and the page says `capped: true`. Default 5000.
   */
  maxScannedSessions?: number;
}

interface ResolvedOptions {
  keyPrefix: string;
  /** Limits of sessions that recorded none. */
  fallback: SessionLimits;
  triggers: { threshold: number; hygieneThreshold: number };
  maxScannedSessions: number;
}

/** Sessions whose meta one pipeline reads while scanning for a fill-sorted or channel-filtered list. */
const SCAN_BATCH = 500;
/** The meta fields a scan reads: enough for the fill, the channel and the last activity. */
const SCAN_FIELDS = ['version', 'lastPromptTokens', 'appendedTokensSince', 'overheadTokens', 'projectionTokens', 'route', 'lastActivityMs', 'limits'] as const;
const CHANNELS: readonly ChannelName[] = CHANNEL_NAMES;
/** Transcript entries replayed for a session's fill history and compaction timeline (the newest). */
const MAX_REPLAY_ENTRIES = 5000;

/**
 * The {@link SessionView} over the Redis session store: rows from the session index, meta, usage
 * ledger and transcript length; details add the fill history and compaction timeline (replayed
 * from the transcript), the current summary and its pinned facts, the notes store and the
 * session's activity. Every figure uses the session's own limits (its meta), so any process shows
 * the same fill whatever its configuration.
 *
 * Listing by last activity (the default) pages in Redis: `ZCARD` + `ZREVRANGE`/`ZRANGE` on the
 * session index in one pipeline, then the page's rows in another — two round trips whatever the
 * number of sessions (ties in last activity come in Redis's member order). Sorting by fill or
 * filtering by channel reads the meta of the `maxScannedSessions` most recent sessions in
 * pipelined batches of 500, then the page's rows; older sessions are not listed (`capped: true`).
 * @throws RangeError when `maxScannedSessions` is not an integer ≥ 1.
 */
export function createRedisSessionView(deps: { redis: RedisClient }, options: RedisSessionViewOptions): SessionView {
  const o = resolve(options);
  const { redis } = deps;
  const store = createSessionStore({ redis }, { keyPrefix: o.keyPrefix });
  return {
    async listSessions(list: ListSessionsOptions = {}): Promise<SessionPage> {
      const query = toQuery(list);
      return query.sort === 'lastActivity' && !query.channel ? pageByActivity(redis, o, query) : pageByScan(redis, o, query);
    },
    async getSession(id: string): Promise<SessionDetail | null> {
      const keys = sessionKeys(id, o.keyPrefix);
      const [snapshot, usage, notes, transcript, length, failed, busy, waiting, grants] = await Promise.all([
        store.load(id), readUsage(redis, keys), createSessionNotes(redis, keys).list(), readRecentTranscript(redis, keys), redis.xlen(keys.transcript),
        redis.llen(keys.failed), redis.exists(keys.lease), redis.llen(keys.inbox), redis.hvals(keys.grants),
      ]);
      if (snapshot.meta.version === 0 && snapshot.entries.length === 0 && length === 0) return null;
      const limits = limitsOf(o, snapshot.meta);
      const row = toRow(o, id, snapshot.meta, usage, length);
      const replay = replayTranscript(transcript, snapshot.meta.overheadTokens, limits);
      const context = contextFigures(row.contextTokens, limits, o.triggers);
      const summary = findSummary(snapshot.entries, snapshot.meta);
      return {
        session: row, ledger: toLedger(usage, snapshot.meta), limits, context,
        fillHistory: replay.fillHistory, compactions: replay.compactions, resets: replay.resets,
        summary: summary?.body ?? null, pinnedFacts: summary?.pinned ?? [],
        notes: Object.keys(notes).sort().map((key) => ({ key, text: notes[key]! })),
        grants: grants.map((json) => toGrant(json)).sort((a, b) => a.atMs - b.atMs), decisions: decisionsOf(transcript), toolCalls: replay.toolCalls,
        activity: { createdAt: snapshot.meta.createdAtMs || snapshot.meta.lastActivityMs, contextMessages: snapshot.entries.length, busy: busy === 1, waiting },
        failed,
      };
    },
  };
}

function resolve(options: RedisSessionViewOptions): ResolvedOptions {
  const o = { ...stripUndefined(options), contextWindow: options.contextWindow };
  const maxScannedSessions = o.maxScannedSessions ?? 5000;
  if (!Number.isInteger(maxScannedSessions) || maxScannedSessions < 1) {
    throw new RangeError(`\`maxScannedSessions\` must be an integer ≥ 1 (got ${maxScannedSessions})`);
  }
  const model = o.model ?? 'unknown';
  return {
    keyPrefix: o.keyPrefix ?? DEFAULT_KEY_PREFIX, maxScannedSessions,
    fallback: { model, summaryModel: o.summaryModel ?? model, contextWindow: o.contextWindow, reservedOutputTokens: o.reservedOutputTokens ?? 0 },
    triggers: { threshold: o.threshold ?? DEFAULT_COMPRESS_THRESHOLD, hygieneThreshold: o.hygieneThreshold ?? DEFAULT_HYGIENE_THRESHOLD },
  };
}

/** The session's recorded limits, else the view's defaults. */
function limitsOf(o: ResolvedOptions, meta: SessionMeta): SessionLimits {
  return meta.limits ?? o.fallback;
}

/**
 * The newest {@link MAX_REPLAY_ENTRIES} transcript entries, oldest first: the dashboard polls
 * details, so a very long transcript is never read whole (its fill history then starts mid-way).
 */
/** A stored grant (src/approvals, JSON `{ v: 1, tool, by, atMs }`) as the surfaces show it. */
function toGrant(json: string): SessionGrant {
  const { tool, by, atMs } = JSON.parse(json) as SessionGrant;
  return { tool, by, atMs };
}

function decisionsOf(entries: readonly StoredTranscriptEntry[]): SessionDecision[] {
  return entries.flatMap((e) => (e.type === 'approval'
    ? [{ approvalId: e.approvalId, tool: e.tool, args: e.args, decision: e.decision, via: e.via, ...(e.by ? { by: e.by } : {}), always: e.always, atMs: e.atMs }]
    : []));
}

async function readRecentTranscript(redis: RedisClient, keys: SessionKeys): Promise<StoredTranscriptEntry[]> {
  if ((await redis.xlen(keys.transcript)) <= MAX_REPLAY_ENTRIES) return readTranscript(redis, keys);
  const newest = await redis.xrevrange(keys.transcript, '+', '-', 'COUNT', MAX_REPLAY_ENTRIES);
  return newest.reverse().map(([entryId, fields]) => ({ ...(JSON.parse(fields[fields.indexOf('data') + 1]!) as TranscriptEntry), id: entryId }));
}

/** {@link ListSessionsOptions} with the defaults applied, as `pageSessions` applies them. */
interface ListQuery {
  sort: 'lastActivity' | 'fill';
  desc: boolean;
  offset: number;
  limit: number;
  channel?: ChannelName;
}

/** What a scan knows of a session: enough to filter and sort it. */
interface Candidate {
  id: string;
  channel: ChannelName;
  fill: number;
  lastActivityAt: number;
}

function toQuery(list: ListSessionsOptions): ListQuery {
  const query: ListQuery = {
    sort: list.sort ?? 'lastActivity', desc: (list.order ?? 'desc') === 'desc',
    offset: Math.max(0, list.offset ?? 0), limit: Math.max(1, list.limit ?? DEFAULT_PAGE_SIZE),
  };
  if (list.channel) query.channel = list.channel;
  return query;
}

/** One page by last activity, ranged on the index itself: the work does not grow with the sessions. */
async function pageByActivity(redis: RedisClient, o: ResolvedOptions, query: ListQuery): Promise<SessionPage> {
  const index = sessionIndexKey(o.keyPrefix);
  const last = query.offset + query.limit - 1;
  const pipe = redis.pipeline().zcard(index);
  if (query.desc) pipe.zrevrange(index, query.offset, last);
  else pipe.zrange(index, query.offset, String(last));
  const [total, ids] = (await execAll(pipe)) as [number, string[]];
  return { items: await readRows(redis, o, ids), total, offset: query.offset, limit: query.limit };
}

/** One page by fill, or filtered by channel: scans the most recent sessions' meta in batches, then reads the page. */
async function pageByScan(redis: RedisClient, o: ResolvedOptions, query: ListQuery): Promise<SessionPage> {
  const index = sessionIndexKey(o.keyPrefix);
  const [indexed, ids] = (await execAll(redis.pipeline().zcard(index).zrevrange(index, 0, o.maxScannedSessions - 1))) as [number, string[]];
  const candidates: Candidate[] = [];
  for (let start = 0; start < ids.length; start += SCAN_BATCH) {
    const batch = ids.slice(start, start + SCAN_BATCH);
    const replies = await perSession(redis, batch, (pipe, id) => pipe.hmget(sessionKeys(id, o.keyPrefix).meta, ...SCAN_FIELDS));
    batch.forEach((id, k) => {
      const candidate = toCandidate(o, id, replies[k]![0] as Array<string | null>);
      if (candidate && (!query.channel || candidate.channel === query.channel)) candidates.push(candidate);
    });
  }
  const sign = query.desc ? -1 : 1;
  const key = (c: Candidate) => (query.sort === 'fill' ? c.fill : c.lastActivityAt);
  candidates.sort((a, b) => sign * (key(a) - key(b)) || a.id.localeCompare(b.id));
  const page = candidates.slice(query.offset, query.offset + query.limit).map((c) => c.id);
  const result: SessionPage = { items: await readRows(redis, o, page), total: candidates.length, offset: query.offset, limit: query.limit };
  if (indexed > ids.length) result.capped = true;
  return result;
}

function toCandidate(o: ResolvedOptions, id: string, values: Array<string | null>): Candidate | null {
  if (values.every((value) => value === null)) return null;
  const raw: Record<string, string> = {};
  SCAN_FIELDS.forEach((field, k) => {
    if (values[k] !== null) raw[field] = values[k]!;
  });
  const meta = parseMeta(raw);
  return { id, channel: channelOf(id, meta), fill: fillOf(contextTokensOf(meta), limitsOf(o, meta)), lastActivityAt: meta.lastActivityMs };
}

/** The rows of `ids`, in that order, read with one pipeline; sessions without meta are left out. */
async function readRows(redis: RedisClient, o: ResolvedOptions, ids: readonly string[]): Promise<SessionRow[]> {
  const replies = await perSession(redis, ids, (pipe, id) => {
    const keys: SessionKeys = sessionKeys(id, o.keyPrefix);
    pipe.hgetall(keys.meta).hgetall(keys.usage).xlen(keys.transcript);
  });
  const rows: SessionRow[] = [];
  ids.forEach((id, k) => {
    const [rawMeta, rawUsage, length] = replies[k] as [Record<string, string>, Record<string, string>, number];
    if (Object.keys(rawMeta).length > 0) rows.push(toRow(o, id, parseMeta(rawMeta), parseUsage(rawUsage), length));
  });
  return rows;
}

/**
 * Runs `add`'s commands for every session and returns each session's replies. One pipeline on a
 * single node; on a cluster one pipeline per session (its keys share a hash tag), in parallel.
 * @throws the first command error.
 */
async function perSession(redis: RedisClient, ids: readonly string[], add: (pipe: ChainableCommander, id: string) => void): Promise<unknown[][]> {
  if (ids.length === 0) return [];
  if (redis.isCluster) return Promise.all(ids.map((id) => pipelineOf(redis, [id], add).then((replies) => replies[0]!)));
  return pipelineOf(redis, ids, add);
}

async function pipelineOf(redis: RedisClient, ids: readonly string[], add: (pipe: ChainableCommander, id: string) => void): Promise<unknown[][]> {
  const pipe = redis.pipeline();
  const counts = ids.map((id) => {
    const before = pipe.length;
    add(pipe, id);
    return pipe.length - before;
  });
  const replies = await execAll(pipe);
  let next = 0;
  return counts.map((count) => replies.slice(next, (next += count)));
}

/** Executes a pipeline. @returns its replies in order. @throws the first command error. */
async function execAll(pipe: ChainableCommander): Promise<unknown[]> {
  const replies = (await pipe.exec()) ?? [];
  const failed = replies.find(([err]) => err);
  if (failed) throw failed[0];
  return replies.map(([, value]) => value);
}

type RowUsage = Pick<UsageLedger, 'promptTokens' | 'completionTokens' | 'costMicroUsd' | 'unpricedCalls' | 'compactions' | 'resets'>;

/** Tokens of the session's next request (0 for a session never committed). */
function contextTokensOf(meta: SessionMeta): number {
  return meta.version === 0 ? 0 : requestTokens({ meta });
}

function toRow(o: ResolvedOptions, id: string, meta: SessionMeta, usage: RowUsage, transcriptLength: number): SessionRow {
  const limits = limitsOf(o, meta);
  const contextTokens = contextTokensOf(meta);
  // Every compaction attempt and every reset is one transcript event that is not a message.
  const events = sumValues(usage.compactions) + usage.resets;
  return {
    id,
    channel: channelOf(id, meta),
    model: limits.model,
    messages: Math.max(0, transcriptLength - events),
    contextTokens,
    contextWindow: limits.contextWindow,
    usableWindow: usableWindowOf(limits),
    fill: fillOf(contextTokens, limits),
    promptTokens: usage.promptTokens,
    completionTokens: usage.completionTokens,
    costUsd: usage.costMicroUsd / 1_000_000,
    unpricedCalls: usage.unpricedCalls,
    compactions: effectiveCompactions(usage.compactions),
    lastActivityAt: meta.lastActivityMs,
    paused: meta.compaction?.paused === true,
  };
}

function toLedger(usage: UsageLedger, meta: SessionMeta): SessionLedger {
  const byLayer: SessionLedger['compactionsByLayer'] = {};
  for (const [field, count] of Object.entries(usage.compactions)) {
    const [layer, outcome] = field.split(':') as [CompactionLayer, keyof NonNullable<SessionLedger['compactionsByLayer'][CompactionLayer]>];
    byLayer[layer] = { ...byLayer[layer], [outcome]: count };
  }
  return {
    promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, cachedTokens: usage.cachedTokens, cacheShare: cacheShareOf(usage.promptTokens, usage.cachedTokens), calls: usage.calls,
    costUsd: usage.costMicroUsd / 1_000_000, unpricedCalls: usage.unpricedCalls, compactions: effectiveCompactions(usage.compactions), compactionsByLayer: byLayer,
    tokensRemoved: usage.tokensRemovedByCompaction, lastPromptTokens: meta.lastPromptTokens,
    summaryCalls: usage.summaryCalls, summaryPromptTokens: usage.summaryPromptTokens, summaryCompletionTokens: usage.summaryCompletionTokens,
    resets: usage.resets,
  };
}

/** The summary block the engine wrote, as the session's compaction state recorded it: imitated markers are not a summary. */
function findSummary(entries: readonly StoredEntry[], meta: SessionMeta): { body: string; pinned: string[] } | null {
  const found = findEngineSummary(entries.map((entry) => entry.message), toCompactionState(meta.compaction).summary);
  return found ? { body: found.body, pinned: found.pinned } : null;
}

function channelOf(id: string, meta: SessionMeta): ChannelName {
  if (meta.route) return meta.route.channel;
  const prefix = id.split(':')[0] as ChannelName;
  return CHANNELS.includes(prefix) ? prefix : 'web';
}

function sumValues(record: Record<string, number>): number {
  return Object.values(record).reduce((sum, n) => sum + n, 0);
}
