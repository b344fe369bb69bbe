import type { RedisClient } from '../redis/client.js';
import { outboundOrderKey } from '../redis/keys.js';
import { runScriptWithOptions } from '../redis/scripts.js';
import { OUTBOUND_ORDER_HOLD_MS } from './outbound-shard.js';

/**
 * Per-session order of the outbound replies taken but not delivered yet: the one being delivered
 * (recorded before it is sent, so a gateway that dies during the send leaves it in its place), one
 * that failed transiently or was rate limited and waits in the delayed set, and the later replies
 * held back behind them. A reply goes when no reply entered before it is still pending, so one
 * chat's replies arrive in the order the consumer first took them, across a gateway crash too. A
 * pending reply stops holding the others back `maxHoldMs` after it entered (the key expires then
 * too), so a vanished reply never blocks a chat for good.
 */
export interface OutboundOrder {
  /**
   * Records `jobId` (a recorded one keeps its place) and says whether it may be delivered now: it
   * is the oldest reply of its session not delivered yet. Settle it once delivered or failed for good.
   */
  mayDeliver(sessionId: string, jobId: string): Promise<boolean>;
  /** Records `jobId` as pending (it failed and will be tried again); a recorded one keeps its place. */
  markPending(sessionId: string, jobId: string): Promise<void>;
  /** Forgets `jobId`: it was delivered or failed for good. */
  settle(sessionId: string, jobId: string): Promise<void>;
}

/** Options of {@link createOutboundOrder}. */
export interface OutboundOrderOptions {
  /** Namespace of the keys: the outbound shard's prefix and the queue's name (keys share the prefix's hash tag). */
  queuePrefix: string;
  outboundQueue: string;
  /** How long a pending reply may hold its session's later replies back, ms. Default 600 000. */
  maxHoldMs?: number;
  /** Clock, ms since epoch. Default `Date.now`. */
  now?: () => number;
}

/** Creates the Redis-backed {@link OutboundOrder}: one key per session with pending replies. */
export function createOutboundOrder(deps: { redis: RedisClient }, options: OutboundOrderOptions): OutboundOrder {
  // The add script records each reply's place with the same hold (src/outbound/outbound-shard.ts).
  const maxHoldMs = options.maxHoldMs ?? OUTBOUND_ORDER_HOLD_MS;
  const now = options.now ?? Date.now;
  const keyOf = (sessionId: string) => outboundOrderKey(options.queuePrefix, options.outboundQueue, sessionId);
  const enter = async (sessionId: string, jobId: string, mode: 'check' | 'pending'): Promise<boolean> => {
    const reply = await runScriptWithOptions(deps.redis, 'enterOutboundOrder', [keyOf(sessionId)], { jobId, nowMs: now(), holdMs: maxHoldMs, mode });
    return Number(reply) === 1;
  };
  return {
    mayDeliver: (sessionId, jobId) => enter(sessionId, jobId, 'check'),
    async markPending(sessionId, jobId) {
      await enter(sessionId, jobId, 'pending');
    },
    async settle(sessionId, jobId) {
      await deps.redis.zrem(keyOf(sessionId), jobId);
    },
  };
}
