import type { ChainableCommander } from 'ioredis';
import type { ChannelName } from '../core/inbound.js';
import { hasToolCalls, messageText, type ChatMessage } from '../core/messages.js';
import { PINNED_HEADING, SUMMARY_END, parseSummary } from '../core/summary-block.js';
import { REPLY_PRIMING_TOKENS } from '../core/tokens.js';
import type {
  CompactionEvent, CompactionLayer, FillPoint, ListSessionsOptions, SessionDetail, SessionLedger, SessionNote,
  SessionPage, SessionReader, SessionRow,
} from '../monitor/session-reader.js';
import { DEFAULT_PAGE_SIZE } from '../monitor/session-reader.js';
import type { RedisClient } from './client.js';
import { DEFAULT_KEY_PREFIX, sessionIndexKey, sessionKeys, type SessionKeys } from './keys.js';
import { createSessionStore, parseMeta, requestTokens, type SessionMeta, type StoredEntry } from './session-store.js';
import { readTranscript, type StoredTranscriptEntry, type TranscriptEntry } from './transcript.js';
import { parseUsage, readUsage, type UsageLedger } from './usage.js';
import { stripUndefined } from '../core/objects.js';

/** `model` of the transcript event `/reset` and `chatgate reset` write (a `manual`/`noop` compaction event). */
export const RESET_EVENT_MODEL = 'reset';

/** Options of {@link createRedisSessionReader}. */
export interface RedisSessionReaderOptions {
  /** Session key prefix. Default `cg:`. */
  keyPrefix?: string;
  /** The model's context window, tokens (fill = context tokens ÷ window). */
  contextWindow: number;
  /** In-loop trigger as a share of (window − reserve). Default 0.5. */
  threshold?: number;
  /** Hygiene trigger as a share of (window − reserve). Default 0.85. */
  hygieneThreshold?: number;
  /** Output reserve subtracted before the triggers, tokens. Default 0. */
  reservedOutputTokens?: number;
  /**
   * Most recent sessions considered when the list is sorted by fill or filtered by channel (those
   * need every candidate's meta; sorting by last activity pages in Redis and has no cap). Older
   * sessions are left out of such lists and the page says `capped: true`. Default 5000.
   */
  maxScannedSessions?: number;
}

type ResolvedOptions = Required<RedisSessionReaderOptions>;

const DEFAULTS = { keyPrefix: DEFAULT_KEY_PREFIX, threshold: 0.5, hygieneThreshold: 0.85, reservedOutputTokens: 0, maxScannedSessions: 5000 };
/** Sessions whose meta one pipeline reads while scanning for a fill-sorted or channel-filtered list. */
const SCAN_BATCH = 500;
/** The meta fields a scan reads: enough for the fill, the channel and the last activity. */
const SCAN_FIELDS = ['version', 'lastPromptTokens', 'appendedTokensSince', 'overheadTokens', 'projectionTokens', 'route', 'lastActivityMs'] as const;
const CHANNELS: readonly ChannelName[] = ['telegram', 'discord', 'web'];
/** Transcript entries replayed for a session's fill history and compaction timeline (the newest). */
const MAX_REPLAY_ENTRIES = 5000;

/**
 * The monitor's {@link SessionReader} over the Redis session store: rows from the session index,
 * meta, usage ledger and transcript length; details add the fill history and compaction timeline
 * (replayed from the transcript: an estimate between provider reports), the current summary,
 * pinned facts and notes.
 *
 * Listing by last activity (the default) pages in Redis: `ZCARD` + `ZREVRANGE`/`ZRANGE` on the
 * session index in one pipeline, then the page's rows in another — two round trips whatever the
 * number of sessions (ties in last activity come in Redis's member order). Sorting by fill or
 * filtering by channel reads the meta of the `maxScannedSessions` most recent sessions in
 * pipelined batches of 500, then the page's rows; older sessions are not listed (`capped: true`).
 * @throws RangeError when `maxScannedSessions` is not an integer ≥ 1.
 */
export function createRedisSessionReader(deps: { redis: RedisClient }, options: RedisSessionReaderOptions): SessionReader {
  const o: ResolvedOptions = { ...DEFAULTS, ...stripUndefined(options) } as ResolvedOptions;
  if (!Number.isInteger(o.maxScannedSessions) || o.maxScannedSessions < 1) {
    throw new RangeError(`\`maxScannedSessions\` must be an integer ≥ 1 (got ${o.maxScannedSessions})`);
  }
  const { redis } = deps;
  const store = createSessionStore({ redis }, { keyPrefix: o.keyPrefix });
  return {
    async listSessions(list: ListSessionsOptions = {}): Promise<SessionPage> {
      const query = toQuery(list);
      return query.sort === 'lastActivity' && !query.channel ? pageByActivity(redis, o, query) : pageByScan(redis, o, query);
    },
    async getSession(id: string): Promise<SessionDetail | null> {
      const keys = sessionKeys(id, o.keyPrefix);
      const [snapshot, usage, notes, transcript, length, failed] = await Promise.all([
        store.load(id), readUsage(redis, keys), redis.hgetall(keys.notes), readRecentTranscript(redis, keys), redis.xlen(keys.transcript),
        redis.llen(keys.failed),
      ]);
      if (snapshot.meta.version === 0 && snapshot.entries.length === 0 && length === 0) return null;
      const row = toRow(o, id, snapshot.meta, usage, length);
      const replay = replayTranscript(transcript, snapshot.meta.overheadTokens, o.contextWindow);
      const summary = findSummary(snapshot.entries);
      return {
        session: row,
        ledger: toLedger(usage, snapshot.meta),
        thresholds: thresholdsOf(o),
        fillHistory: replay.fillHistory,
        compactions: replay.compactions,
        summary: summary?.body ?? null,
        pinnedFacts: summary?.pinned ?? [],
        notes: toNotes(notes, replay.noteTimes, snapshot.meta.lastActivityMs),
        failed,
      };
    },
  };
}

/**
 * The newest {@link MAX_REPLAY_ENTRIES} transcript entries, oldest first: the dashboard polls
 * details, so a very long transcript is never read whole (its fill history then starts mid-way).
 */
async function readRecentTranscript(redis: RedisClient, keys: SessionKeys): Promise<StoredTranscriptEntry[]> {
  if ((await redis.xlen(keys.transcript)) <= MAX_REPLAY_ENTRIES) return readTranscript(redis, keys);
  const newest = await redis.xrevrange(keys.transcript, '+', '-', 'COUNT', MAX_REPLAY_ENTRIES);
  return newest.reverse().map(([streamId, fields]) => ({ ...(JSON.parse(fields[fields.indexOf('data') + 1]) as TranscriptEntry), id: streamId }));
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
      const candidate = toCandidate(o, id, replies[k][0] as Array<string | null>);
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
  return { id, channel: channelOf(id, meta), fill: contextTokensOf(meta) / o.contextWindow, lastActivityAt: meta.lastActivityMs };
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
  if (redis.isCluster) return Promise.all(ids.map((id) => pipelineOf(redis, [id], add).then((replies) => replies[0])));
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

type RowUsage = Pick<UsageLedger, 'promptTokens' | 'completionTokens' | 'costMicroUsd' | 'compactions'>;

function contextTokensOf(meta: SessionMeta): number {
  return meta.version === 0 ? 0 : requestTokens({ meta });
}

function toRow(o: ResolvedOptions, id: string, meta: SessionMeta, usage: RowUsage, transcriptLength: number): SessionRow {
  const compactions = sumValues(usage.compactions);
  const contextTokens = contextTokensOf(meta);
  return {
    id,
    channel: channelOf(id, meta),
    messages: Math.max(0, transcriptLength - compactions),
    contextTokens,
    contextWindow: o.contextWindow,
    fill: contextTokens / o.contextWindow,
    promptTokens: usage.promptTokens,
    completionTokens: usage.completionTokens,
    costUsd: usage.costMicroUsd / 1_000_000,
    compactions,
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
    promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, cachedTokens: usage.cachedTokens, calls: usage.calls,
    costUsd: usage.costMicroUsd / 1_000_000, compactions: sumValues(usage.compactions), compactionsByLayer: byLayer,
    tokensRemoved: usage.tokensRemovedByCompaction, lastPromptTokens: meta.lastPromptTokens,
  };
}

function thresholdsOf(o: ResolvedOptions): SessionDetail['thresholds'] {
  const usable = (o.contextWindow - o.reservedOutputTokens) / o.contextWindow;
  return { compress: o.threshold * usable, hygiene: o.hygieneThreshold * usable };
}

interface Replay {
  fillHistory: FillPoint[];
  compactions: CompactionEvent[];
  /** Note key → when `remember` last wrote it. */
  noteTimes: Map<string, number>;
}

/**
 * Replays the transcript: context = overhead + tokens of the messages since the last compaction
 * (then its `tokensAfter`); a point after every final answer; a turn starts at a user message.
 */
function replayTranscript(entries: readonly StoredTranscriptEntry[], overheadTokens: number, contextWindow: number): Replay {
  const base = Math.max(overheadTokens, REPLY_PRIMING_TOKENS);
  const replay: Replay = { fillHistory: [], compactions: [], noteTimes: new Map() };
  let tokens = base;
  let turn = 0;
  let previousRole = '';
  for (const entry of entries) {
    if (entry.type === 'compaction') {
      replay.compactions.push({
        turn: Math.max(turn, 1), at: entry.atMs, layer: entry.layer as CompactionLayer, outcome: entry.outcome,
        tokensBefore: entry.tokensBefore, tokensAfter: entry.tokensAfter, durationMs: entry.durationMs,
        ...(entry.model ? { model: entry.model } : {}), ...(entry.reason ? { reason: entry.reason } : {}),
      });
      if (entry.model === RESET_EVENT_MODEL && entry.tokensAfter === 0) tokens = base;
      else if (entry.outcome !== 'noop' && entry.outcome !== 'aborted') tokens = entry.tokensAfter + base;
      continue;
    }
    const message = entry.message;
    tokens += entry.tokens;
    if (message.role === 'user' && previousRole !== 'user') turn += 1;
    previousRole = message.role;
    if (hasToolCalls(message)) recordNotes(message, entry.atMs, replay.noteTimes);
    else if (message.role === 'assistant') replay.fillHistory.push({ turn: Math.max(turn, 1), at: entry.atMs, tokens, fill: tokens / contextWindow });
  }
  return replay;
}

function recordNotes(message: ChatMessage, atMs: number, noteTimes: Map<string, number>): void {
  if (!hasToolCalls(message)) return;
  for (const call of message.tool_calls) {
    if (call.function.name !== 'remember') continue;
    try {
      const key = (JSON.parse(call.function.arguments) as { key?: unknown }).key;
      if (typeof key === 'string') noteTimes.set(key, atMs);
    } catch {
      // malformed arguments: the tool refused them too
    }
  }
}

function findSummary(entries: readonly StoredEntry[]): { body: string; pinned: string[] } | null {
  for (const entry of entries) {
    const parsed = parseSummary(entry.message);
    if (parsed) return { body: parsed.body, pinned: pinnedFacts(messageText(entry.message)) };
  }
  return null;
}

function pinnedFacts(text: string): string[] {
  const start = text.indexOf(PINNED_HEADING);
  if (start === -1) return [];
  const end = text.indexOf(SUMMARY_END, start);
  const section = text.slice(start + PINNED_HEADING.length, end === -1 ? undefined : end);
  return section.split('\n').filter((line) => line.startsWith('- ')).map((line) => line.slice(2).trim());
}

function toNotes(notes: Record<string, string>, times: Map<string, number>, fallbackMs: number): SessionNote[] {
  return Object.keys(notes).sort().map((key) => ({ key, text: notes[key], at: times.get(key) ?? fallbackMs }));
}

function channelOf(id: string, meta: SessionMeta): ChannelName {
  if (meta.route) return meta.route.channel;
  const prefix = id.split(':')[0] as ChannelName;
  return CHANNELS.includes(prefix) ? prefix : 'web';
}

function sumValues(record: Record<string, number>): number {
  return Object.values(record).reduce((sum, n) => sum + n, 0);
}

