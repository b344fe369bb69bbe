import type { ChannelName } from '../core/inbound.js';
import { hasToolCalls, messageText, type ChatMessage } from '../core/messages.js';
import { PINNED_HEADING, SUMMARY_END, parseSummary } from '../core/summary-block.js';
import { REPLY_PRIMING_TOKENS } from '../core/tokens.js';
import type {
  CompactionEvent, CompactionLayer, FillPoint, ListSessionsOptions, SessionDetail, SessionLedger, SessionNote,
  SessionPage, SessionReader, SessionRow,
} from '../monitor/session-reader.js';
import { pageSessions } from '../monitor/session-reader.js';
import type { RedisClient } from './client.js';
import { DEFAULT_KEY_PREFIX, sessionIndexKey, sessionKeys, type SessionKeys } from './keys.js';
import { createSessionStore, parseMeta, requestTokens, type SessionMeta, type StoredEntry } from './session-store.js';
import { readTranscript, type StoredTranscriptEntry, type TranscriptEntry } from './transcript.js';
import { readUsage, type UsageLedger } from './usage.js';

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
}

type ResolvedOptions = Required<RedisSessionReaderOptions>;

const DEFAULTS = { keyPrefix: DEFAULT_KEY_PREFIX, threshold: 0.5, hygieneThreshold: 0.85, reservedOutputTokens: 0 };
const CHANNELS: readonly ChannelName[] = ['telegram', 'discord', 'web'];
/** Transcript entries replayed for a session's fill history and compaction timeline (the newest). */
const MAX_REPLAY_ENTRIES = 5000;

/**
 * The monitor's {@link SessionReader} over the Redis session store: rows from the session index,
 * meta, usage ledger and transcript length; details add the fill history and compaction timeline
 * (replayed from the transcript: an estimate between provider reports), the current summary,
 * pinned facts and notes.
 */
export function createRedisSessionReader(deps: { redis: RedisClient }, options: RedisSessionReaderOptions): SessionReader {
  const o: ResolvedOptions = { ...DEFAULTS, ...stripUndefined(options) } as ResolvedOptions;
  const { redis } = deps;
  const store = createSessionStore({ redis }, { keyPrefix: o.keyPrefix });
  return {
    async listSessions(list: ListSessionsOptions = {}): Promise<SessionPage> {
      const ids = await redis.zrevrange(sessionIndexKey(o.keyPrefix), 0, -1);
      const rows = await Promise.all(ids.map((id) => readRow(redis, o, id)));
      return pageSessions(rows.filter((row): row is SessionRow => row !== null), list);
    },
    async getSession(id: string): Promise<SessionDetail | null> {
      const keys = sessionKeys(id, o.keyPrefix);
      const [snapshot, usage, notes, transcript, length] = await Promise.all([
        store.load(id), readUsage(redis, keys), redis.hgetall(keys.notes), readRecentTranscript(redis, keys), redis.xlen(keys.transcript),
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

/** Parses a meta hash as the session store writes it (the store's own parser is private). */
async function readRow(redis: RedisClient, o: ResolvedOptions, id: string): Promise<SessionRow | null> {
  const keys: SessionKeys = sessionKeys(id, o.keyPrefix);
  const [rawMeta, usage, length] = await Promise.all([redis.hgetall(keys.meta), readUsage(redis, keys), redis.xlen(keys.transcript)]);
  if (Object.keys(rawMeta).length === 0) return null;
  return toRow(o, id, parseMeta(rawMeta), usage, length);
}

function toRow(o: ResolvedOptions, id: string, meta: SessionMeta, usage: UsageLedger, transcriptLength: number): SessionRow {
  const compactions = sumValues(usage.compactions);
  const contextTokens = meta.version === 0 ? 0 : requestTokens({ meta });
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

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
