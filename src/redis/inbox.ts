/**
 * A session's inbox after the accept (src/redis/ingest.ts, the one way in): the turn's claim, the
 * counts, the processing list and its dead letters.
 */
import type { InboundMessage, OutboundMessage } from '../core/inbound.js';
import type { Logger } from '../log.js';
import type { RedisClient } from './client.js';
import { runScript, runScriptWithOptions } from './scripts.js';
import type { SessionKeys } from './keys.js';

/**
 * Moves every inbox item to the processing list and returns the whole processing list, oldest
 * first (a crashed turn's items come before new ones). Items leave processing only at commit.
 * An item that is not an inbound message (no string `id`, `channel`, `chatId`, `text`) is moved
 * to the dead-letter list (`keys.failed`) instead, and logged at warn.
 */
export async function claimInbox(redis: RedisClient, keys: SessionKeys, logger?: Logger): Promise<InboundMessage[]> {
  const [malformed, raw] = (await runScript(redis, 'claimInbox', [keys.inbox, keys.processing, keys.failed])) as [number, string[]];
  if (malformed > 0) logger?.warn({ malformed, key: keys.failed }, 'malformed inbox items moved to the dead-letter list');
  return raw.map((item) => JSON.parse(item) as InboundMessage);
}

/**
 * Steers the inbox's leading `steer` messages into the running turn (scripts/steer-inbox-4.lua):
 * moved to the end of the processing list, atomically, only while `fence` holds the lease — so a
 * worker killed after the take leaves them where a retried turn claims them, never lost nor doubled.
 * @returns the messages moved, oldest first, or null when the lease is no longer held by `fence`.
 */
export async function steerInbox(redis: RedisClient, keys: SessionKeys, fence: number): Promise<InboundMessage[] | null> {
  const reply = (await runScriptWithOptions(redis, 'steerInbox', [keys.inbox, keys.processing, keys.lease, keys.meta], { fence: String(fence) })) as [number, ...string[]];
  if (Number(reply[0]) !== 1) return null;
  return reply.slice(1).map((item) => JSON.parse(item as string) as InboundMessage);
}

/** Number of messages waiting in the inbox plus those taken by a running turn. */
export async function pendingCount(redis: RedisClient, keys: SessionKeys): Promise<{ inbox: number; processing: number }> {
  const [inbox, processing] = await Promise.all([redis.llen(keys.inbox), redis.llen(keys.processing)]);
  return { inbox, processing };
}

/** Dead letters kept per session (the newest). */
export const DEAD_LETTER_RETENTION = 1000;

/** The processing list as it is (the items a running or crashed turn has taken), oldest first. */
export async function readProcessing(redis: RedisClient, keys: SessionKeys): Promise<InboundMessage[]> {
  const raw = await redis.lrange(keys.processing, 0, -1);
  return raw.map((item) => JSON.parse(item) as InboundMessage);
}

/**
 * Moves the processing list to the session's dead-letter list (`keys.failed`) and, when anything
 * moved, puts `notice` in the outbox — atomically, only while `fence` holds the lease.
 * @returns the number of messages moved, or null when the lease is not held by `fence`.
 */
export async function deadLetterProcessing(redis: RedisClient, keys: SessionKeys, fence: number, notice: OutboundMessage | null): Promise<number | null> {
  const keysOf = [keys.processing, keys.failed, keys.lease, keys.meta, keys.outbox];
  const moved = Number(await runScriptWithOptions(redis, 'deadLetterProcessing', keysOf, { fence: String(fence), retention: DEAD_LETTER_RETENTION }, [notice ? JSON.stringify(notice) : '']));
  return moved < 0 ? null : moved;
}
