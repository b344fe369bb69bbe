import { toWellFormedInbound, type InboundMessage, type OutboundMessage } from '../core/inbound.js';
import type { Logger } from '../log.js';
import type { RedisClient } from './client.js';
import { runScript, runScriptWithOptions } from './scripts.js';
import { pendingIndexKey, seenKey, sessionKeys, type SessionKeys } from './keys.js';

/** Default of how long a message id is remembered to drop platform re-deliveries, in seconds (a day). */
const DEFAULT_DEDUPE_TTL_SECONDS = 86_400;

/** Options of {@link acceptInbound}. */
export interface AcceptOptions {
  /** Session key prefix. */
  keyPrefix: string;
  /** How long the message id is remembered, in seconds. Default {@link DEFAULT_DEDUPE_TTL_SECONDS}. */
  dedupeTtlSeconds?: number;
  /** When, ms since epoch (the pending index's score). */
  nowMs: number;
}

/**
 * Durably accepts an inbound message, the one way into an inbox: marks the session pending (the
 * sweeper enqueues its turn if the caller dies before doing so), then marks the message seen and
 * appends it to the inbox, atomically. The caller then enqueues the session's turn. Every string
 * is stored well-formed (half an emoji would be dead-lettered by the claim script's JSON decoder).
 * @returns false when the message was seen before (a re-delivery): nothing was appended.
 */
export async function acceptInbound(redis: RedisClient, sessionId: string, message: InboundMessage, options: AcceptOptions): Promise<boolean> {
  const keys = sessionKeys(sessionId, options.keyPrefix);
  const seen = seenKey(sessionId, message.id, options.keyPrefix);
  // Marked pending first (its own slot): if this process dies before the turn is enqueued, the sweeper does it.
  await redis.zadd(pendingIndexKey(options.keyPrefix), options.nowMs, sessionId);
  const ttlSeconds = options.dedupeTtlSeconds ?? DEFAULT_DEDUPE_TTL_SECONDS;
  return Number(await runScriptWithOptions(redis, 'acceptInbound', [seen, keys.inbox], { ttlSeconds, seenValue: String(message.receivedAt) }, [JSON.stringify(toWellFormedInbound(message))])) === 1;
}

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
