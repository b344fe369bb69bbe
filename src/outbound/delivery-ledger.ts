import type { RedisClient } from '../redis/client.js';
import { DEFAULT_KEY_PREFIX, replyDeliveryKey } from '../redis/keys.js';
import { OUTBOUND_MARKER_TTL_S } from './outbound-shard.js';

/** Which reply a ledger entry belongs to. */
export interface ReplyRef {
  sessionId: string;
  /** The OutboundMessage id: stable across retries of the same reply. */
  replyId: string;
}

/**
 * Port: remembers which chunks of a reply were sent, so a retried delivery job never sends a
 * chunk twice. Small on purpose: one read, one write.
 */
export interface DeliveryLedger {
  /** Chunk index → platform message id, for every chunk of the reply already sent. */
  sentChunks(ref: ReplyRef): Promise<Map<number, string>>;
  /** Records that chunk `index` was sent as platform message `messageId`. */
  markSent(ref: ReplyRef, index: number, messageId: string): Promise<void>;
}

/** Options of {@link createRedisDeliveryLedger}. */
export interface RedisDeliveryLedgerOptions {
  /** Key prefix. Default `cg:`. */
  keyPrefix?: string;
  /**
   * How long a reply's record is kept after its last chunk, in ms. Default a day: as long as the
   * reply's outbound marker, which makes adding the reply again a no-op (src/outbound/outbound-shard.ts).
   */
  ttlMs?: number;
}

const DEFAULTS = { keyPrefix: DEFAULT_KEY_PREFIX, ttlMs: OUTBOUND_MARKER_TTL_S * 1000 } satisfies Required<RedisDeliveryLedgerOptions>;

/**
 * The delivery record of one reply: a hash `chunk index → message id` in the session's hash slot
 * (`<prefix>{<sessionId>}:delivery:<replyId>`), expiring `ttlMs` after the last write.
 */
export function deliveryKey(ref: ReplyRef, keyPrefix: string = DEFAULT_KEY_PREFIX): string {
  return replyDeliveryKey(ref.sessionId, ref.replyId, keyPrefix);
}

/** A {@link DeliveryLedger} in Redis. */
export function createRedisDeliveryLedger(deps: { redis: RedisClient }, options: RedisDeliveryLedgerOptions = {}): DeliveryLedger {
  const resolved = { ...DEFAULTS, ...options };
  if (!(resolved.ttlMs > 0)) throw new RangeError(`\`ttlMs\` must be > 0 (got ${resolved.ttlMs})`);
  const { redis } = deps;
  return {
    async sentChunks(ref) {
      const entries = await redis.hgetall(deliveryKey(ref, resolved.keyPrefix));
      return new Map(Object.entries(entries).map(([index, messageId]) => [Number(index), messageId]));
    },
    async markSent(ref, index, messageId) {
      const key = deliveryKey(ref, resolved.keyPrefix);
      // Sent in one tick, the two commands leave in one socket write (src/redis/client.ts coalesces
      // them) — without an ioredis pipeline, whose construction copies every script the connection knows.
      await Promise.all([redis.hset(key, String(index), messageId), redis.pexpire(key, resolved.ttlMs)]);
    },
  };
}

/** A {@link DeliveryLedger} in memory: the default for a single process and a test double. */
export function createMemoryDeliveryLedger(): DeliveryLedger {
  const replies = new Map<string, Map<number, string>>();
  const keyOf = (ref: ReplyRef): string => `${ref.sessionId}\u0000${ref.replyId}`;
  return {
    async sentChunks(ref) {
      return new Map(replies.get(keyOf(ref)));
    },
    async markSent(ref, index, messageId) {
      const key = keyOf(ref);
      const sent = replies.get(key) ?? new Map<number, string>();
      sent.set(index, messageId);
      replies.set(key, sent);
    },
  };
}
