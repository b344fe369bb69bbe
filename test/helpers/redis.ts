import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/** A Redis connection with a unique key prefix and queue prefix, and a cleanup that deletes both. */
export interface TestRedis {
  redis: Redis;
  /** Session key prefix, e.g. `cgtest:1a2b3c:`. */
  keyPrefix: string;
  /** BullMQ prefix, hash-tagged, e.g. `{cgtest1a2b3c}`. */
  queuePrefix: string;
  /** The URL the connection uses (for child processes). */
  url: string;
  /** Queue shards the test's processes use: CHATGATE_TEST_SHARDS (the `shards` vitest project sets 4), default 1. */
  queueShards: number;
  /** `{ queuePrefix, queueShards }`, for sharded queues and consumers. */
  names: { queuePrefix: string; queueShards: number };
  /** Env of a child process: CHATGATE_QUEUE_SHARDS. */
  shardEnv: { CHATGATE_QUEUE_SHARDS: string };
  /** Env of a `chatgate` child process on this Redis: REDIS_URL, both prefixes and CHATGATE_QUEUE_SHARDS. */
  env: { REDIS_URL: string; CHATGATE_KEY_PREFIX: string; CHATGATE_QUEUE_PREFIX: string; CHATGATE_QUEUE_SHARDS: string };
  /** Deletes every key under both prefixes and closes the connection. */
  cleanup(): Promise<void>;
}

/** Connects to REDIS_URL (default 127.0.0.1:6379) with fresh prefixes. */
export function createTestRedis(): TestRedis {
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const id = randomBytes(5).toString('hex');
  const keyPrefix = `cgtest:${id}:`;
  const queuePrefix = `{cgtest${id}}`;
  const queueShards = testShards();
  return {
    redis, keyPrefix, queuePrefix, url, queueShards, names: { queuePrefix, queueShards }, shardEnv: { CHATGATE_QUEUE_SHARDS: String(queueShards) },
    env: { REDIS_URL: url, CHATGATE_KEY_PREFIX: keyPrefix, CHATGATE_QUEUE_PREFIX: queuePrefix, CHATGATE_QUEUE_SHARDS: String(queueShards) },
    async cleanup() {
      await deleteMatching(redis, `${keyPrefix}*`);
      await deleteMatching(redis, `${queuePrefix}*`);
      // The shards' prefixes put the shard number inside the hash tag: `{cgtest<id>-3}`.
      await deleteMatching(redis, `${queuePrefix.slice(0, -1)}-*`);
      redis.disconnect();
    },
  };
}

/** CHATGATE_TEST_SHARDS as a shard count (default 1). @throws Error when it is not a positive integer. */
export function testShards(): number {
  const raw = process.env.CHATGATE_TEST_SHARDS ?? '1';
  if (!/^[1-9]\d*$/.test(raw)) throw new Error(`CHATGATE_TEST_SHARDS must be a positive integer (got ${raw})`);
  return Number(raw);
}

/** Deletes every key matching a glob pattern (SCAN, never FLUSH). */
export async function deleteMatching(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== '0');
}

/** Replies taken from the outbound queue, in the order the collector received them. */
export interface OutboundCollector {
  replies: Array<import('../../src/core/inbound.js').OutboundMessage>;
  /** Resolves once `predicate(replies)` holds (checked on every reply). */
  waitFor(predicate: (replies: OutboundCollector['replies']) => boolean): Promise<void>;
  close(): Promise<void>;
}

/** Consumes the outbound queue (concurrency 1 per shard, so each chat's order is kept) into a list. */
export async function collectOutbound(t: { redis: import('../../src/redis/client.js').RedisClient; names: TestRedis['names'] }, queueName = 'outbound'): Promise<OutboundCollector> {
  const { createOutboundConsumer } = await import('../../src/outbound/consumer.js');
  const { createSilentLogger } = await import('../../src/log.js');
  const { shardPrefixes } = await import('../../src/queue/names.js');
  const replies: OutboundCollector['replies'] = [];
  const waiters: Array<{ predicate: (r: OutboundCollector['replies']) => boolean; resolve: () => void }> = [];
  const check = () => {
    for (const waiter of waiters.splice(0)) {
      if (waiter.predicate(replies)) waiter.resolve();
      else waiters.push(waiter);
    }
  };
  // The gateway's consumer with a delivery that only records the reply.
  const delivery = {
    deliver: async (message: OutboundCollector['replies'][number]) => {
      replies.push(message);
      check();
      return { replyId: message.id, chunks: 1, sent: 1, skipped: 0, plainFallbacks: 0, messageIds: [] };
    },
  };
  const consumers = shardPrefixes(t.names).map((queuePrefix) => createOutboundConsumer({ redis: t.redis, delivery, logger: createSilentLogger() }, { queuePrefix, outboundQueue: queueName, concurrency: 1 }));
  return {
    replies,
    waitFor(predicate) {
      if (predicate(replies)) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
    close: async () => { await Promise.all(consumers.map((consumer) => consumer.close())); },
  };
}

/** The replies in the outbound streams (waiting or being delivered), shard by shard, oldest first: what `enqueueOutbound` added. */
export async function readOutboundStreams(t: Pick<TestRedis, 'redis' | 'names'>, queueName = 'outbound'): Promise<Array<import('../../src/core/inbound.js').OutboundMessage>> {
  const { shardPrefixes } = await import('../../src/queue/names.js');
  const { outboundShardKeys } = await import('../../src/redis/keys.js');
  const out: Array<import('../../src/core/inbound.js').OutboundMessage> = [];
  for (const prefix of shardPrefixes(t.names)) {
    for (const [, fields] of await t.redis.xrange(outboundShardKeys(prefix, queueName).stream, '-', '+')) {
      const data = fields[fields.indexOf('data') + 1];
      if (data !== undefined) out.push(JSON.parse(data) as import('../../src/core/inbound.js').OutboundMessage);
    }
  }
  return out;
}
