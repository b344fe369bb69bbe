/**
 * coalesceWrites (src/redis/client.ts): the commands a connection sends in one tick leave in one
 * socket write, their replies come back in order, and a reconnected connection coalesces again.
 */
import type { Socket } from 'node:net';
import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRedis, duplicateRedis } from '../../src/redis/client.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import type { Redis } from 'ioredis';

let t: TestRedis;
beforeEach(() => { t = createTestRedis(); });
afterEach(async () => { await t.cleanup(); });

/** Counts the socket-level writes (`_write` / `_writev`) of a connection's current stream. */
function countSocketWrites(redis: Redis): () => number {
  const stream = (redis as unknown as { stream: Socket & { _write: (...a: unknown[]) => void; _writev?: (...a: unknown[]) => void } }).stream;
  let writes = 0;
  const write = stream._write.bind(stream);
  stream._write = (...args) => { writes++; write(...args); };
  if (stream._writev) {
    const writev = stream._writev.bind(stream);
    stream._writev = (...args) => { writes++; writev(...args); };
  }
  return () => writes;
}

describe('coalesceWrites', () => {
  it('sends the commands of one tick in one write, replies in order; a plain connection writes each', async () => {
    const coalesced = createRedis(t.url);
    const plain = t.redis;
    try {
      for (const [redis, most] of [[coalesced, 1], [plain, 100]] as const) {
        await redis.ping();
        const writes = countSocketWrites(redis);
        const keys = Array.from({ length: 100 }, (_, i) => `${t.keyPrefix}k${i}`);
        const replies = await Promise.all(keys.map((key, i) => redis.incrby(key, i + 1)));
        expect(replies).toEqual(keys.map((_, i) => i + 1));
        if (redis === coalesced) expect(writes()).toBeLessThanOrEqual(most);
        else expect(writes()).toBeGreaterThan(1);
        await redis.del(...keys);
      }
    } finally {
      coalesced.disconnect();
    }
  });

  it('coalesces on a duplicate and again after a reconnect', async () => {
    const original = createRedis(t.url);
    const redis = duplicateRedis(original) as Redis;
    try {
      await redis.ping();
      const ready = once(redis, 'ready');
      redis.disconnect(true);
      await ready;
      const writes = countSocketWrites(redis);
      const replies = await Promise.all(Array.from({ length: 20 }, () => redis.ping()));
      expect(replies).toEqual(Array(20).fill('PONG'));
      expect(writes()).toBe(1);
    } finally {
      redis.disconnect();
      original.disconnect();
    }
  });
});
