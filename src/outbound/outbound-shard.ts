import type { OutboundMessage } from '../core/inbound.js';
import type { RedisClient } from '../redis/client.js';
import { outboundOrderKey, outboundShardKeys, type OutboundShardKeys } from '../redis/keys.js';
import { runScriptWithOptions } from '../redis/scripts.js';

/** The consumer group every gateway reads an outbound shard's stream in. */
export const OUTBOUND_GROUP = 'gateways';
/** How long a reply's marker makes re-adding it a no-op, s (a day: a retried turn re-adds its reply within it). */
export const OUTBOUND_MARKER_TTL_S = 86_400;
/** How long the order of a session's replies added is kept without a new one, ms (the consumer's default `maxOrderHoldMs`). */
export const OUTBOUND_ORDER_HOLD_MS = 600_000;
/** How long a reply that failed for good is kept (with its reason and its marker), ms. */
export const OUTBOUND_FAILED_KEEP_MS = 7 * 86_400_000;

/** Counts of one outbound shard, or of every shard summed: the shape `chatgate status` shows for each queue. */
export interface OutboundCounts {
  /** In the stream, not taken by any gateway yet. */
  waiting: number;
  /** Taken by a gateway and not settled (being delivered, or its gateway died and it waits to be claimed). */
  active: number;
  /** Waiting for a retry-after, a backoff or an older reply of its chat. */
  delayed: number;
  /** Failed for good within the last 7 days. */
  failed: number;
}

/** One entry read from a shard's stream, as stored (the consumer validates it). */
export interface OutboundEntry {
  entryId: string;
  /** The entry's fields: `id`, `data` (the reply, JSON), `attempts`, `enq` (ms it was first enqueued). */
  fields: Record<string, string>;
  /** How many times the group handed the entry out (1 on the first read; each claim of a dead gateway's entry adds one). */
  deliveries: number;
}

/** A reply that failed for good, as an operator reads it. */
export interface FailedReply {
  /** The reply id (or the stream entry id of an entry without one). */
  id: string;
  reason: string;
  attempts: number;
  failedAtMs: number;
  /** The reply, when its entry held a readable one. */
  message?: OutboundMessage;
}

/** What a delayed entry carries back into the stream. */
export interface DelayedEntry {
  data: string;
  attempts: number;
  enqueuedAtMs: number;
}

/** The operations of one outbound shard: its keys share the shard prefix's hash tag (one Cluster slot). */
export interface OutboundShard {
  readonly prefix: string;
  readonly keys: OutboundShardKeys;
  /** Adds `message` unless its id is known (waiting, active, delayed, delivered within a day, failed). @returns whether it was added. */
  add(message: OutboundMessage): Promise<boolean>;
  /** Creates the consumer group (from the stream's start: nothing added before is skipped); an existing one is kept. */
  ensureGroup(): Promise<void>;
  /** Reads up to `count` new entries for `consumer` on the blocking connection `blocking`, waiting at most `blockMs`. */
  read(blocking: RedisClient, consumer: string, count: number, blockMs: number): Promise<OutboundEntry[]>;
  /** Takes over entries pending longer than `minIdleMs` (their gateway died), from `cursor`. */
  claimStalled(consumer: string, minIdleMs: number, cursor: string, count: number): Promise<{ cursor: string; entries: OutboundEntry[] }>;
  /**
   * Resets the idle time of the entries `consumer` still holds (the lock renewal of replies being
   * delivered); one another consumer claimed meanwhile stays with it, one settled meanwhile is skipped.
   * @returns how many another consumer took over.
   */
  renew(consumer: string, entryIds: readonly string[]): Promise<number>;
  /** Delivered: acknowledged, deleted and out of its session's order (the chat's later replies may go) in one step. */
  ack(entryId: string, message: Pick<OutboundMessage, 'id' | 'sessionId'>): Promise<boolean>;
  /** Out of the stream into the delayed set until `dueMs`. @returns false when the entry was settled already. */
  delay(entryId: string, replyId: string, dueMs: number, entry: DelayedEntry): Promise<boolean>;
  /** Failed for good with `record`. @returns false when the entry was settled already. */
  fail(entryId: string, record: FailedReply, nowMs: number): Promise<boolean>;
  /** Moves due delayed entries into the stream. @returns how many, and when the next one is due (-1: none). */
  promote(nowMs: number, limit: number): Promise<{ moved: number; nextDueMs: number }>;
  counts(nowMs: number): Promise<OutboundCounts>;
  /** The most recent replies that failed for good, newest first. */
  failed(nowMs: number, limit: number): Promise<FailedReply[]>;
  /** Removes `consumer` from the group when it holds no entry (a clean stop). */
  leave(consumer: string): Promise<void>;
}

/** Opens shard `prefix` of outbound queue `queue` on `redis` (no connection of its own). */
export function openOutboundShard(redis: RedisClient, prefix: string, queue: string): OutboundShard {
  const keys = outboundShardKeys(prefix, queue);
  const settle = async (name: 'outboundAck' | 'outboundDelay' | 'outboundFail', scriptKeys: string[], options: object, items: string[] = []) =>
    Number(await runScriptWithOptions(redis, name, scriptKeys, { group: OUTBOUND_GROUP, ...options }, items)) === 1;
  return {
    prefix, keys,
    async add(message) {
      const options = { id: message.id, nowMs: Date.now(), markerTtlS: OUTBOUND_MARKER_TTL_S, holdMs: OUTBOUND_ORDER_HOLD_MS };
      const scriptKeys = [keys.marker(message.id), keys.stream, outboundOrderKey(prefix, queue, message.sessionId)];
      return Number(await runScriptWithOptions(redis, 'outboundAdd', scriptKeys, options, [JSON.stringify(message)])) === 1;
    },
    async ensureGroup() {
      try {
        await redis.xgroup('CREATE', keys.stream, OUTBOUND_GROUP, '0', 'MKSTREAM');
      } catch (err) {
        if (!String((err as Error).message).startsWith('BUSYGROUP')) throw err;
      }
    },
    async read(blocking, consumer, count, blockMs) {
      const reply = await blocking.xreadgroup('GROUP', OUTBOUND_GROUP, consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', keys.stream, '>') as Array<[string, RawEntry[]]> | null;
      return (reply?.[0]?.[1] ?? []).map((raw) => toEntry(raw, 1));
    },
    async claimStalled(consumer, minIdleMs, cursor, count) {
      const [next, raw] = await redis.xautoclaim(keys.stream, OUTBOUND_GROUP, consumer, minIdleMs, cursor, 'COUNT', count) as [string, RawEntry[]];
      const live = raw.filter((entry) => entry[1] !== null);
      if (live.length === 0) return { cursor: next, entries: [] };
      // The claim counted one more delivery: the stall count is read back from the pending list.
      const pending = await redis.xpending(keys.stream, OUTBOUND_GROUP, live[0]![0], live[live.length - 1]![0], live.length * 2, consumer) as Array<[string, string, number, number]>;
      const deliveries = new Map(pending.map(([id, , , count]) => [id, Number(count)]));
      return { cursor: next, entries: live.map((entry) => toEntry(entry, deliveries.get(entry[0]) ?? 2)) };
    },
    async renew(consumer, entryIds) {
      if (entryIds.length === 0) return 0;
      return Number(await runScriptWithOptions(redis, 'outboundRenew', [keys.stream], { group: OUTBOUND_GROUP, consumer }, [...entryIds]));
    },
    ack: (entryId, message) => settle('outboundAck', [keys.stream, outboundOrderKey(prefix, queue, message.sessionId)], { entryId, replyId: message.id }),
    delay: (entryId, replyId, dueMs, entry) => settle('outboundDelay', [keys.stream, keys.delayed, keys.delayedData], { entryId, replyId, dueMs: Math.round(dueMs) }, [
      JSON.stringify({ data: entry.data, attempts: String(entry.attempts), enq: String(entry.enqueuedAtMs) }),
    ]),
    fail: (entryId, record, nowMs) => settle('outboundFail', [keys.stream, keys.failed, keys.failedData, keys.marker(record.id)], {
      entryId, replyId: record.id, nowMs, keepMs: OUTBOUND_FAILED_KEEP_MS,
    }, [JSON.stringify(record)]),
    async promote(nowMs, limit) {
      const [moved, nextDueMs] = await runScriptWithOptions(redis, 'outboundPromote', [keys.stream, keys.delayed, keys.delayedData], { nowMs, limit }) as [number, number];
      return { moved: Number(moved), nextDueMs: Number(nextDueMs) };
    },
    async counts(nowMs) {
      const results = await redis.pipeline()
        .xlen(keys.stream).xpending(keys.stream, OUTBOUND_GROUP).zcard(keys.delayed).zcount(keys.failed, nowMs - OUTBOUND_FAILED_KEEP_MS, '+inf')
        .exec();
      const value = (i: number): unknown => {
        const [err, result] = results?.[i] ?? [new Error('no reply'), null];
        // No group yet (no gateway ever started on this shard): nothing is active.
        if (err && i === 1 && String(err.message).startsWith('NOGROUP')) return [0];
        if (err) throw err;
        return result;
      };
      const active = Number((value(1) as [number])[0] ?? 0);
      return { waiting: Math.max(0, Number(value(0)) - active), active, delayed: Number(value(2)), failed: Number(value(3)) };
    },
    async failed(nowMs, limit) {
      const ids = await redis.zrevrangebyscore(keys.failed, '+inf', nowMs - OUTBOUND_FAILED_KEEP_MS, 'LIMIT', 0, limit);
      if (ids.length === 0) return [];
      const records = await redis.hmget(keys.failedData, ...ids);
      return ids.map((id, i) => toFailedReply(id, records[i] ?? null));
    },
    async leave(consumer) {
      const pending = await redis.xpending(keys.stream, OUTBOUND_GROUP, '-', '+', 1, consumer) as unknown[];
      if (pending.length === 0) await redis.xgroup('DELCONSUMER', keys.stream, OUTBOUND_GROUP, consumer);
    },
  };
}

/** A stream entry as Redis returns it: `[id, [field, value, …]]` (null fields: deleted while pending). */
type RawEntry = [string, string[] | null];

function toEntry([entryId, list]: RawEntry, deliveries: number): OutboundEntry {
  const fields: Record<string, string> = {};
  for (let i = 0; list && i + 1 < list.length; i += 2) fields[list[i]!] = list[i + 1]!;
  return { entryId, fields, deliveries };
}

function toFailedReply(id: string, raw: string | null): FailedReply {
  try {
    const record = JSON.parse(raw ?? '') as Partial<FailedReply>;
    return { id, reason: String(record.reason ?? '?'), attempts: Number(record.attempts ?? 0), failedAtMs: Number(record.failedAtMs ?? 0), ...(record.message ? { message: record.message } : {}) };
  } catch {
    return { id, reason: 'its record is unreadable', attempts: 0, failedAtMs: 0 };
  }
}
