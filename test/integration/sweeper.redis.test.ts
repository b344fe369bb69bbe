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
      expect(await sweeper.run()).toBe(1);
      const waiting = await turns.getJobs(['waiting']);
      expect(waiting.map((job) => job.data)).toEqual([{ sessionId: 'web:stranded' }]);
      expect(await t.redis.zrange(index, '0', '-1')).toEqual(['web:fresh']);
      // A second sweep finds nothing left to do.
      expect(await sweeper.run()).toBe(0);
    } finally {
      sweeper.stop();
      await turns.close();
      await producer.close();
    }
  });

  it('keeps up with 1,000 new sessions a second: after every sweep only the sessions inside the grace period are left in the index', async () => {
    const producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix });
    const turns = new Queue('turns', { connection: t.redis, prefix: t.queuePrefix });
    const index = pendingIndexKey(t.keyPrefix);
    const RATE = 1000; // new sessions a second
    const GRACE_S = 10;
    const INTERVAL_S = 30;
    let clock = 0;
    const sweeper = startPendingSweeper({ redis: t.redis, producer, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, intervalMs: 3_600_000, graceMs: GRACE_S * 1000, sweepAtStart: false, now: () => clock });
    // Every 100th session still has a message waiting (its gateway died before enqueueing the turn).
    const stranded: string[] = [];
    try {
      for (let second = 1; second <= 2 * INTERVAL_S; second++) {
        const members: Array<string | number> = [];
        for (let k = 0; k < RATE; k++) members.push(second * 1000, `web:s${second}-${k}`);
        await t.redis.zadd(index, ...members);
        const strandedId = `web:s${second}-0`;
        stranded.push(strandedId);
        await t.redis.rpush(sessionKeys(strandedId, t.keyPrefix).inbox, JSON.stringify({ id: `${strandedId}:1`, text: 'hello' }));
        clock = second * 1000 + 500;
        if (second % INTERVAL_S !== 0) continue;
        const before = await t.redis.zcard(index);
        const enqueued = await sweeper.run();
        // Entries marked within the grace period stay (their ingest may still be running); all older ones are gone.
        const left = await t.redis.zrangebyscore(index, '-inf', '+inf', 'WITHSCORES');
        const scores = left.filter((_, i) => i % 2 === 1).map(Number);
        expect(Math.min(...scores)).toBeGreaterThan(clock - GRACE_S * 1000);
        expect(scores.length).toBe(GRACE_S * RATE);
        expect(before - scores.length).toBe((INTERVAL_S - GRACE_S) * RATE + (second === INTERVAL_S ? 0 : GRACE_S * RATE));
        expect(enqueued).toBe(second === INTERVAL_S ? INTERVAL_S - GRACE_S : INTERVAL_S);
      }
      // Every stranded session older than the grace got exactly one turn.
      const waiting = await turns.getJobs(['waiting'], 0, -1);
      const sessions = waiting.map((job) => (job.data as { sessionId: string }).sessionId).sort();
      expect(sessions).toEqual(stranded.slice(0, 2 * INTERVAL_S - GRACE_S).sort());
    } finally {
      sweeper.stop();
      await turns.close();
      await producer.close();
    }
  });

  it('keeps a session whose turn could not be enqueued in the index, and enqueues it on the next sweep', async () => {
    const real = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix });
    let failFor: string | undefined = 'web:unlucky';
    const producer = { ...real, enqueueTurn: async (sessionId: string) => {
      if (sessionId === failFor) throw new Error('Redis answered too late');
      await real.enqueueTurn(sessionId);
    } };
    const turns = new Queue('turns', { connection: t.redis, prefix: t.queuePrefix });
    const index = pendingIndexKey(t.keyPrefix);
    for (const id of ['web:unlucky', 'web:lucky']) await t.redis.rpush(sessionKeys(id, t.keyPrefix).inbox, JSON.stringify({ id: `${id}:1`, text: 'hi' }));
    await t.redis.zadd(index, 1_000, 'web:unlucky', 1_000, 'web:lucky');
    const sweeper = startPendingSweeper({ redis: t.redis, producer, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, intervalMs: 3_600_000, sweepAtStart: false, now: () => 100_000 });
    try {
      expect(await sweeper.run()).toBe(1);
      expect(await t.redis.zrange(index, '0', '-1')).toEqual(['web:unlucky']);
      failFor = undefined;
      expect(await sweeper.run()).toBe(1);
      expect(await t.redis.zcard(index)).toBe(0);
      expect((await turns.getJobs(['waiting'])).map((job) => (job.data as { sessionId: string }).sessionId).sort()).toEqual(['web:lucky', 'web:unlucky']);
    } finally {
      sweeper.stop();
      await turns.close();
      await real.close();
    }
  });
});
