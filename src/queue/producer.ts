import type { GroupSessionMode, InboundMessage } from '../core/inbound.js';
import { sessionKeyOf } from '../core/inbound.js';
import type { RedisClient } from '../redis/client.js';
import { acceptInbound } from '../redis/ingest.js';
import { DEFAULT_KEY_PREFIX } from '../redis/keys.js';
import { resolveQueueNames, turnDedupId, type QueueNames, type TurnJobData } from './names.js';
import { openShardedQueue } from './sharded.js';

/** Options of {@link createTurnProducer}. */
export interface TurnProducerOptions extends Partial<QueueNames> {
  /** Session key prefix. Default `cg:`. */
  keyPrefix?: string;
  /** How group chats map to sessions. Default `per-chat`. */
  groupMode?: GroupSessionMode;
  /** Attempts of a turn job (a crashed or failed turn is retried). Default 5. */
  attempts?: number;
  /** How long {@link TurnProducer.submitInbound} remembers a message id to drop re-deliveries, in seconds. Default 86 400. */
  dedupeTtlSeconds?: number;
  /** Clock, ms since epoch. Default `Date.now`. */
  now?: () => number;
}

/** Enqueues turns; used by the gateway. */
export interface TurnProducer {
  /**
   * Accepts `message` into its session's inbox through the gateway's one accept (src/redis/ingest.ts:
   * pending index, seen marker and inbox append in one step; a re-delivered message id is not added
   * again), then makes sure one turn job is pending for the session (at most one active and one
   * waiting per session). Durable once it resolves; no allow-list, rate limit, commands or hygiene.
   * @returns the session id.
   */
  submitInbound(message: InboundMessage): Promise<string>;
  /** Enqueues a turn for a session whose inbox already holds messages (e.g. after a restart). */
  enqueueTurn(sessionId: string): Promise<void>;
  close(): Promise<void>;
}

/** Creates the producer of turn jobs. `redis` must have `maxRetriesPerRequest: null`. */
export function createTurnProducer(deps: { redis: RedisClient }, options: TurnProducerOptions = {}): TurnProducer {
  const names = resolveQueueNames(options);
  const keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  // Each session's turn job goes to its shard; with one shard, the one queue of before.
  const queue = openShardedQueue<TurnJobData>(names.turnQueue, names, deps.redis);
  // A lost connection is reported where it matters, by the rejected `add`; the queue's own event would only print it again.
  queue.onError(() => undefined);
  const attempts = options.attempts ?? 5;
  const now = options.now ?? Date.now;
  const enqueueTurn = async (sessionId: string): Promise<void> => {
    await queue.add('turn', { sessionId }, {
      deduplication: { id: turnDedupId(sessionId), keepLastIfActive: true },
      attempts,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: 1000,
      removeOnFail: 5000,
    });
  };
  return {
    async submitInbound(message) {
      const sessionId = sessionKeyOf(message, options.groupMode);
      await acceptInbound(deps.redis, { sessionId, message, keyPrefix, dedupeTtlSeconds: options.dedupeTtlSeconds, nowMs: now() });
      await enqueueTurn(sessionId);
      return sessionId;
    },
    enqueueTurn,
    async close() {
      await queue.close();
    },
  };
}
