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
  return {
    redis, keyPrefix, queuePrefix, url,
    async cleanup() {
      await deleteMatching(redis, `${keyPrefix}*`);
      await deleteMatching(redis, `${queuePrefix}*`);
      redis.disconnect();
    },
  };
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

/** Consumes the outbound queue (concurrency 1, so order is kept) into a list. */
export async function collectOutbound(t: TestRedis, queueName = 'outbound'): Promise<OutboundCollector> {
  const { Worker } = await import('bullmq');
  const replies: OutboundCollector['replies'] = [];
  const waiters: Array<{ predicate: (r: OutboundCollector['replies']) => boolean; resolve: () => void }> = [];
  const check = () => {
    for (const waiter of waiters.splice(0)) {
      if (waiter.predicate(replies)) waiter.resolve();
      else waiters.push(waiter);
    }
  };
  const worker = new Worker(queueName, async (job) => {
    replies.push(job.data);
    check();
  }, { connection: t.redis, prefix: t.queuePrefix, concurrency: 1 });
  await worker.waitUntilReady();
  return {
    replies,
    waitFor(predicate) {
      if (predicate(replies)) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
    close: () => worker.close(),
  };
}
