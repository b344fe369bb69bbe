/**
 * The queue layout on real Redis: two processes starting at once with different shard counts
 * cannot both pass, a count in use by a live process is not taken over, and a process still
 * running with an old count notices that another was recorded and stops taking work.
 */
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { GatewayError } from '../../src/errors.js';
import { claimQueueLayout, recordedShards } from '../../src/queue/shard-layout.js';
import { guardTurnProducer, holdQueueLayout } from '../../src/queue/shard-layout-guard.js';
import { resolveQueueNames } from '../../src/queue/names.js';
import { createTurnProducer } from '../../src/queue/producer.js';
import { openShardedQueue } from '../../src/queue/sharded.js';
import { queueLayoutKey } from '../../src/redis/keys.js';
import { createSilentLogger } from '../../src/log.js';
import { runWorker } from '../../workers/main.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { createLogSink } from '../helpers/log-sink.js';
import { createTestRedis, deleteMatching, type TestRedis } from '../helpers/redis.js';

/** A web chat message opening chat `chat`. */
function webMessage(chat: string): InboundMessage {
  return { id: `web:${chat}:1`, channel: 'web', chatId: chat, userId: 'u', userName: 'U', text: 'hello', attachments: [], receivedAt: Date.now() };
}

describe('queue layout', () => {
  let t: TestRedis;
  /** Run after each test, last added first. */
  const closers: Array<() => Promise<unknown>> = [];
  beforeEach(() => { t = createTestRedis(); });
  afterEach(async () => {
    while (closers.length > 0) await closers.pop()!();
    await t.cleanup();
  });

  const names = (queueShards: number) => resolveQueueNames({ queuePrefix: t.queuePrefix, queueShards });
  const connection = () => {
    const redis = new Redis(t.url, { maxRetriesPerRequest: null });
    closers.push(async () => redis.disconnect());
    return redis;
  };

  it('of two processes starting at once with different counts, exactly one passes and its count is recorded', async () => {
    const [a, b] = [connection(), connection()];
    for (let round = 0; round < 20; round++) {
      const [one, four] = await Promise.allSettled([
        claimQueueLayout(a, names(1), { member: `a${round}`, ttlMs: 60_000 }),
        claimQueueLayout(b, names(4), { member: `b${round}`, ttlMs: 60_000 }),
      ]);
      const passed = [one, four].filter((r) => r.status === 'fulfilled');
      expect(passed).toHaveLength(1);
      const refused = (one.status === 'rejected' ? one : four) as PromiseRejectedResult;
      expect(refused.reason).toBeInstanceOf(GatewayError);
      expect((refused.reason as GatewayError).code).toBe('QUEUE_LAYOUT_MISMATCH');
      expect(await recordedShards(t.redis, t.queuePrefix)).toBe(one.status === 'fulfilled' ? 1 : 4);
      await deleteMatching(t.redis, `${t.queuePrefix}*`);
    }
  });

  it('refuses another count while a live process uses the recorded one, and takes over once it stopped cleanly', async () => {
    const held = await holdQueueLayout({ redis: t.redis, logger: createSilentLogger() }, names(1), { ttlMs: 60_000 });
    const refused = await claimQueueLayout(t.redis, names(4), { member: 'b' }).then(() => null, (err: unknown) => err);
    expect((refused as GatewayError).code).toBe('QUEUE_LAYOUT_MISMATCH');
    expect((refused as Error).message).toMatch(/CHATGATE_QUEUE_SHARDS is 4, but the queues under \{cgtest\w+\} are laid out in 1 shard\(s\) and 1 other gateway or worker process\(es\) still use it/);
    expect(await t.redis.get(queueLayoutKey(t.queuePrefix))).toBe('1');
    // The same count joins; after a clean stop of the only user, the new count is recorded.
    await claimQueueLayout(t.redis, names(1));
    await held.release();
    await claimQueueLayout(t.redis, names(4), { member: 'b' });
    expect(await t.redis.get(queueLayoutKey(t.queuePrefix))).toBe('4');
  });

  it('a process cut off from Redis past its period, while another count took over, notices on its next renewal and refuses to enqueue turns', async () => {
    const cut = connection();
    const moved: number[] = [];
    const held = await holdQueueLayout({ redis: cut, logger: createSilentLogger() }, names(1), { ttlMs: 300, onMoved: (recorded) => moved.push(recorded) });
    closers.push(() => held.release());
    const producer = guardTurnProducer(createTurnProducer({ redis: cut }, { keyPrefix: t.keyPrefix, ...names(1) }), held);
    closers.push(() => producer.close());
    cut.disconnect();
    // Its use lapses in Redis (no clock of ours decides it); then a process with 4 shards starts.
    for (;;) {
      const claimed = await claimQueueLayout(t.redis, names(4), { member: 'new', ttlMs: 60_000 }).then(() => true, () => false);
      if (claimed) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(held.moved).toBeNull();
    await cut.connect();
    await held.renew();
    expect(held.moved).toBe(4);
    expect(moved).toEqual([4]);
    expect(() => held.check()).toThrow(/now laid out in 4 shard\(s\), but this process runs with CHATGATE_QUEUE_SHARDS=1: it stops taking work .* Restart it with CHATGATE_QUEUE_SHARDS=4/);
    await expect(producer.enqueueTurn('web:late')).rejects.toMatchObject({ code: 'QUEUE_LAYOUT_MOVED' });
    const turns = openShardedQueue<{ sessionId: string }>('turns', names(1), t.redis);
    closers.push(() => turns.close());
    expect(await turns.getJobCounts('waiting')).toEqual({ waiting: 0 });
    // Nothing renewed it back: the new count stays recorded.
    expect(await recordedShards(t.redis, t.queuePrefix)).toBe(4);
  });

  describe('a running worker', () => {
    let fake: FakeOpenAI;
    beforeEach(async () => { fake = await startFakeOpenAI(); });
    afterEach(async () => { await fake.close(); });

    it('stops taking turns with one error line naming both counts when another count is recorded while it runs', async () => {
      const sink = createLogSink();
      const worker = await runWorker({ redis: t.redis, logger: sink.logger }, {
        keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, queueShards: 1, contextWindow: 16_000, heartbeatTtlMs: 300,
        llm: { baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-4o-mini' },
      });
      closers.push(() => worker.close());
      const producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, ...names(1) });
      closers.push(() => producer.close());
      await producer.submitInbound(webMessage('before'));
      await fake.waitForRequest(() => true);
      // What a process of an earlier chatgate version does (it records its count without joining the users).
      await t.redis.set(queueLayoutKey(t.queuePrefix), '4');
      const line = await sink.waitFor((l) => l.level === 50 && /now laid out in 4 shard/.test(l.msg));
      expect(line.msg).toContain('this process runs with CHATGATE_QUEUE_SHARDS=1: it stops taking work');
      expect(line.msg).toContain('Restart it with CHATGATE_QUEUE_SHARDS=4');
      const calls = fake.requests.length;
      await producer.submitInbound(webMessage('after'));
      // Several renewal periods and far longer than a turn takes: the turn is still waiting, untouched.
      await new Promise((resolve) => setTimeout(resolve, 1200));
      const turns = openShardedQueue<{ sessionId: string }>('turns', names(1), t.redis);
      closers.push(() => turns.close());
      expect(await turns.getJobCounts('waiting')).toEqual({ waiting: 1 });
      expect(fake.requests).toHaveLength(calls);
      expect(sink.lines.filter((l) => l.level === 50 && /now laid out/.test(l.msg))).toHaveLength(1);
    });
  });
});
