import type { OutboundMessage } from '../core/inbound.js';
import type { RedisClient } from '../redis/client.js';
import { sessionShardPrefix, shardPrefixes, type QueueNames } from '../queue/names.js';
import { openOutboundShard, type FailedReply, type OutboundCounts, type OutboundShard } from './outbound-shard.js';

/** Delivery attempts of a reply (rate limits and waits behind an older reply do not spend them). */
export const OUTBOUND_ATTEMPTS = 8;

/**
 * Where replies are enqueued: the outbound transport ({@link openOutboundQueue}), which puts each
 * reply in the shard of its session. `add` is a no-op for an id it knows.
 */
export interface OutboundSink {
  /** @returns whether the reply was added (false: its id is waiting, delivered within a day, or failed). */
  add(message: OutboundMessage): Promise<boolean>;
}

/**
 * The outbound queue: per shard (`shardPrefixes`) a Redis stream read by the gateways' consumer
 * group, a delayed set and a failed set (src/outbound/outbound-shard.ts). One round trip per reply
 * added; no connection of its own.
 */
export interface OutboundQueue extends OutboundSink {
  /** The logical queue name (`outbound`). */
  readonly name: string;
  /** Every shard, shard 0 first. */
  readonly shards: readonly OutboundShard[];
  /** The shard that holds session `sessionId`'s replies. */
  forSession(sessionId: string): OutboundShard;
  /** Counts summed over every shard. */
  counts(): Promise<OutboundCounts>;
  /** The most recent replies that failed for good (within 7 days), newest first, over every shard. */
  failed(limit?: number): Promise<FailedReply[]>;
}

/**
 * Enqueues `message` for delivery by the gateway: the only producer of the outbound queue, for
 * replies (workers) and notices (ingest) alike. Idempotent per `message.id`.
 */
export async function enqueueOutbound(queue: OutboundSink, message: OutboundMessage): Promise<void> {
  await queue.add(message);
}

/** Opens the outbound queue of `names` on `redis`. */
export function openOutboundQueue(redis: RedisClient, names: Pick<QueueNames, 'queuePrefix' | 'queueShards' | 'outboundQueue'>): OutboundQueue {
  const byPrefix = new Map(shardPrefixes(names).map((prefix) => [prefix, openOutboundShard(redis, prefix, names.outboundQueue)]));
  const shards = [...byPrefix.values()];
  const forSession = (sessionId: string): OutboundShard => byPrefix.get(sessionShardPrefix(names, sessionId))!;
  return {
    name: names.outboundQueue, shards, forSession,
    add: (message) => forSession(message.sessionId).add(message),
    async counts() {
      const total: OutboundCounts = { waiting: 0, active: 0, delayed: 0, failed: 0 };
      const now = Date.now();
      for (const counts of await Promise.all(shards.map((shard) => shard.counts(now)))) {
        for (const state of Object.keys(total) as Array<keyof OutboundCounts>) total[state] += counts[state];
      }
      return total;
    },
    async failed(limit = 20) {
      const now = Date.now();
      const all = (await Promise.all(shards.map((shard) => shard.failed(now, limit)))).flat();
      return all.sort((a, b) => b.failedAtMs - a.failedAtMs).slice(0, limit);
    },
  };
}
