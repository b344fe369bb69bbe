import { CHANNEL_NAMES, type InboundMessage } from '../core/inbound.js';
import type { RedisClient } from './client.js';
import { runScript } from './scripts.js';
import { channelDeadLetterKey, sessionIndexKey, sessionKeys, type SessionKeys } from './keys.js';

/** One dead letter: the inbound message, or the raw item when it is not one (a malformed inbox item). */
export type DeadLetter = { message: InboundMessage; raw?: undefined } | { message?: undefined; raw: string };

/** The session's dead-letter list (`keys.failed`), oldest first. */
export async function readDeadLetters(redis: RedisClient, keys: SessionKeys): Promise<DeadLetter[]> {
  const items = await redis.lrange(keys.failed, 0, -1);
  return items.map(toDeadLetter);
}

/** Number of messages in the session's dead-letter list. */
export async function deadLetterCount(redis: RedisClient, keys: SessionKeys): Promise<number> {
  return redis.llen(keys.failed);
}

/** Dead letters over all sessions: what `chatgate status` shows (`chatgate failed <session>` lists them). */
export interface DeadLetterTotals {
  /** Messages in the sessions' dead-letter lists. */
  messages: number;
  /** Sessions that have any, most dead letters first. */
  sessions: Array<{ id: string; count: number }>;
  /** Sessions looked at (the most recent, up to the cap). */
  scanned: number;
  /** Sessions in the index; more than `scanned` when the scan was capped. */
  indexed: number;
  /** Platform updates a channel set aside (they never became messages), by channel. */
  setAside: Record<string, number>;
}

const TOTALS_BATCH = 500;

/**
 * Counts the dead letters of the `maxSessions` most recent sessions (default 10 000) in pipelined
 * batches (one pipeline per session on a Cluster), and the updates each channel set aside.
 */
export async function countDeadLetters(redis: RedisClient, keyPrefix: string, options: { maxSessions?: number; channels?: readonly string[] } = {}): Promise<DeadLetterTotals> {
  const index = sessionIndexKey(keyPrefix);
  const [indexed, ids] = await Promise.all([redis.zcard(index), redis.zrevrange(index, 0, (options.maxSessions ?? 10_000) - 1)]);
  const sessions: DeadLetterTotals['sessions'] = [];
  for (let start = 0; start < ids.length; start += TOTALS_BATCH) {
    const batch = ids.slice(start, start + TOTALS_BATCH);
    const counts = await lengths(redis, batch.map((id) => sessionKeys(id, keyPrefix).failed));
    batch.forEach((id, k) => { if (counts[k]! > 0) sessions.push({ id, count: counts[k]! }); });
  }
  const channels = options.channels ?? CHANNEL_NAMES;
  const setAsideCounts = await lengths(redis, channels.map((channel) => channelDeadLetterKey(channel, keyPrefix)));
  const setAside = Object.fromEntries(channels.map((channel, k) => [channel, setAsideCounts[k]!]).filter(([, n]) => Number(n) > 0));
  sessions.sort((a, b) => b.count - a.count || a.id.localeCompare(b.id));
  return { messages: sessions.reduce((sum, s) => sum + s.count, 0), sessions, scanned: ids.length, indexed, setAside };
}

/** LLEN of each key: one pipeline on a single node, one command per key (each its own slot) on a Cluster. */
async function lengths(redis: RedisClient, keys: readonly string[]): Promise<number[]> {
  if (redis.isCluster) return Promise.all(keys.map((key) => redis.llen(key)));
  const pipe = redis.pipeline();
  for (const key of keys) pipe.llen(key);
  const replies = (await pipe.exec()) ?? [];
  return replies.map(([err, value]) => {
    if (err) throw err;
    return Number(value);
  });
}

/**
 * Moves every dead letter back to the front of the session's inbox, in their order and ahead of
 * anything already waiting, atomically (one script on the session's slot). The caller then
 * enqueues a turn. @returns the number of messages moved.
 */
export async function requeueDeadLetters(redis: RedisClient, keys: SessionKeys): Promise<number> {
  return Number(await runScript(redis, 'requeueDeadLetters', [keys.failed, keys.inbox]));
}

function toDeadLetter(raw: string): DeadLetter {
  try {
    const value = JSON.parse(raw) as Partial<InboundMessage> | null;
    if (value && typeof value.id === 'string' && typeof value.text === 'string') return { message: value as InboundMessage };
  } catch {
    // not JSON: shown raw
  }
  return { raw };
}
