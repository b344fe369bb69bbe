import { Queue } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startPendingSweeper } from '../../src/gateway/sweeper.js';
import { createSilentLogger } from '../../src/log.js';
import { createTurnProducer } from '../../src/queue/producer.js';
import { pendingIndexKey, sessionKeys } from '../../src/redis/keys.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

let t: TestRedis;

beforeEach(() => {
  t = createTestRedis();
});

afterEach(async () => {
  await t.cleanup();
});

describe('pending sweeper', () => {
  it('enqueues a turn for an accepted message whose turn was never enqueued, and forgets sessions with nothing waiting', async () => {
    const producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix });
    const turns = new Queue('turns', { connection: t.redis, prefix: t.queuePrefix });
    const index = pendingIndexKey(t.keyPrefix);
    // A gateway accepted a message for `web:stranded` and died before enqueueing its turn.
    await t.redis.rpush(sessionKeys('web:stranded', t.keyPrefix).inbox, JSON.stringify({ id: 'web:stranded:1', text: 'hello' }));
    await t.redis.zadd(index, 1_000, 'web:stranded', 1_000, 'web:answered');
    await t.redis.zadd(index, 99_000, 'web:fresh'); // within the grace period: its ingest is still running
    const sweeper = startPendingSweeper({ redis: t.redis, producer, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, intervalMs: 3_600_000, sweepAtStart: false, now: () => 100_000 });
    try {
      expect(await sweeper.sweep()).toBe(1);
      const waiting = await turns.getJobs(['waiting']);
      expect(waiting.map((job) => job.data)).toEqual([{ sessionId: 'web:stranded' }]);
      expect(await t.redis.zrange(index, '0', '-1')).toEqual(['web:fresh']);
      // A second sweep finds nothing left to do.
      expect(await sweeper.sweep()).toBe(0);
    } finally {
      sweeper.stop();
      await turns.close();
      await producer.close();
    }
  });
});
