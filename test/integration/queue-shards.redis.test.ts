import { Queue } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage, OutboundMessage } from '../../src/core/inbound.js';
import { GatewayError } from '../../src/errors.js';
import { ensureQueueLayout } from '../../src/queue/shard-layout.js';
import { resolveQueueNames, sessionShardPrefix, shardPrefixes, turnDedupId } from '../../src/queue/names.js';
import { enqueueOutbound, openOutboundQueue } from '../../src/outbound/outbound-queue.js';
import { createTurnProducer } from '../../src/queue/producer.js';
import { openShardedQueue } from '../../src/queue/sharded.js';
import { outboundShardKeys, queueLayoutKey } from '../../src/redis/keys.js';
import { buildStatusReport } from '../../src/cli/status-report.js';
import { loadConfig } from '../../src/config.js';
import { readQueueDepths } from '../../src/monitor/bull-board.js';
import { runWorker } from '../../workers/main.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const inbound = (chat: string, seq: number): InboundMessage => ({
  id: `web:${chat}:${seq}`, channel: 'web', chatId: chat, userId: 'u', userName: 'U', text: `${chat} ${seq}`, attachments: [], receivedAt: Date.now(),
});

describe('sharded queues', () => {
  let t: TestRedis;
  const closers: Array<() => Promise<unknown>> = [];
  beforeEach(() => { t = createTestRedis(); });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await t.cleanup();
  });

  /** The shard prefixes whose `name` queue holds job `jobId`. */
  async function shardsHolding(name: string, shards: number, jobId: (queue: Queue) => Promise<string | null | undefined>): Promise<string[]> {
    const holding: string[] = [];
    for (const prefix of shardPrefixes({ queuePrefix: t.queuePrefix, queueShards: shards })) {
      const queue = new Queue(name, { connection: t.redis, prefix });
      const id = await jobId(queue);
      if (id && (await queue.getJob(id))) holding.push(prefix);
      await queue.close();
    }
    return holding;
  }

  it("puts each session's turn job and replies in its one shard, deduplicated as before", async () => {
    const names = { queuePrefix: t.queuePrefix, queueShards: 4 };
    const producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, ...names });
    const outbound = openOutboundQueue(t.redis, { ...names, outboundQueue: 'outbound' });
    closers.push(() => producer.close());
    const chats = Array.from({ length: 16 }, (_, i) => `chat${i}`);
    for (const chat of chats) {
      for (const seq of [0, 1, 2]) await producer.submitInbound(inbound(chat, seq));
      const reply: OutboundMessage = { id: `reply-${chat}`, sessionId: `web:${chat}`, channel: 'web', chatId: chat, text: 'hi', kind: 'reply' };
      await enqueueOutbound(outbound, reply);
      await enqueueOutbound(outbound, reply); // a retried turn re-adding its reply: a no-op
    }
    const used = new Set<string>();
    for (const chat of chats) {
      const home = sessionShardPrefix(names, `web:${chat}`);
      used.add(home);
      expect(await shardsHolding('turns', 4, (q) => q.getDeduplicationJobId(turnDedupId(`web:${chat}`)))).toEqual([home]);
      expect(await outboundShardsHolding(4, `reply-${chat}`)).toEqual([home]);
    }
    expect((await outbound.counts()).waiting).toBe(16);
    // Three messages of a session, one pending turn job: 16 jobs in all, over more than one shard.
    expect((await openAndCount(names)).waiting).toBe(16);
    expect(used.size).toBeGreaterThan(1);
  });

  /** The shard prefixes whose outbound stream holds reply `replyId` (each entry once). */
  async function outboundShardsHolding(shards: number, replyId: string): Promise<string[]> {
    const holding: string[] = [];
    for (const prefix of shardPrefixes({ queuePrefix: t.queuePrefix, queueShards: shards })) {
      const entries = await t.redis.xrange(outboundShardKeys(prefix, 'outbound').stream, '-', '+');
      for (const [, fields] of entries) if (fields[fields.indexOf('id') + 1] === replyId) holding.push(prefix);
    }
    return holding;
  }

  async function openAndCount(names: { queuePrefix: string; queueShards: number }): Promise<Record<string, number>> {
    const turns = openShardedQueue<{ sessionId: string }>('turns', names, t.redis);
    try {
      return await turns.getJobCounts('waiting');
    } finally {
      await turns.close();
    }
  }

  it('records the shard count at first start and refuses another one while jobs wait in the old layout', async () => {
    const one = resolveQueueNames({ queuePrefix: t.queuePrefix });
    const four = resolveQueueNames({ queuePrefix: t.queuePrefix, queueShards: 4 });
    // A deployment from before sharding: no record, one job waiting in the single queue.
    const producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, ...one });
    closers.push(() => producer.close());
    await producer.submitInbound(inbound('old', 0));
    const refused = await ensureQueueLayout(t.redis, four).then(() => null, (err: unknown) => err);
    expect(refused).toBeInstanceOf(GatewayError);
    expect((refused as GatewayError).code).toBe('QUEUE_LAYOUT_MISMATCH');
    expect((refused as Error).message).toMatch(/CHATGATE_QUEUE_SHARDS is 4, but the queues under \{cgtest\w+\} are laid out in 1 shard\(s\) and 1 job\(s\) still wait/);
    expect((refused as Error).message).toContain('with CHATGATE_QUEUE_SHARDS=1 until `chatgate status` shows the turns and outbound queues empty');
    expect(await t.redis.get(queueLayoutKey(t.queuePrefix))).toBeNull();

    // The same count is fine; once drained, the new count takes over and is recorded.
    await ensureQueueLayout(t.redis, one);
    expect(await t.redis.get(queueLayoutKey(t.queuePrefix))).toBe('1');
    const turns = new Queue('turns', { connection: t.redis, prefix: t.queuePrefix });
    await turns.obliterate({ force: true });
    await turns.close();
    // A reply waiting in the outbound stream holds the layout too, until it is gone.
    const outbound = openOutboundQueue(t.redis, one);
    await enqueueOutbound(outbound, { id: 'reply-old', sessionId: 'web:old', channel: 'web', chatId: 'old', text: 'hi', kind: 'reply' });
    await expect(ensureQueueLayout(t.redis, four)).rejects.toThrow(/1 job\(s\) still wait/);
    await t.redis.del(outbound.shards[0]!.keys.stream);
    await ensureQueueLayout(t.redis, four);
    expect(await t.redis.get(queueLayoutKey(t.queuePrefix))).toBe('4');

    // A worker started with yet another count refuses before it takes anything.
    const sharded = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, ...four });
    closers.push(() => sharded.close());
    await sharded.submitInbound(inbound('new', 0));
    await expect(runWorker({ redis: t.redis }, {
      keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, queueShards: 2, contextWindow: 16_000,
      llm: { baseURL: 'http://127.0.0.1:9/v1', apiKey: 'k', model: 'gpt-4o-mini' },
    })).rejects.toThrow(/CHATGATE_QUEUE_SHARDS is 2, but .* laid out in 4 shard\(s\)/);
    expect(await t.redis.get(queueLayoutKey(t.queuePrefix))).toBe('4');
  });

  it('`chatgate status` and the queue-depth metrics count every shard', async () => {
    const names = { queuePrefix: t.queuePrefix, queueShards: 4 };
    const producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, ...names });
    const turns = openShardedQueue<{ sessionId: string }>('turns', names, t.redis);
    closers.push(() => producer.close(), () => turns.close());
    for (let i = 0; i < 12; i++) await producer.submitInbound(inbound(`c${i}`, 0));
    const config = loadConfig({ REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, CHATGATE_QUEUE_SHARDS: '4', OPENAI_API_KEY: 'k', CHATGATE_LOG_LEVEL: 'silent' });
    const report = await buildStatusReport(config, t.redis);
    expect(report.queues.turns!.waiting).toBe(12);
    expect(report.checks.find((c) => c.name === 'queues')?.detail).toContain('turns: 12 waiting');
    // Processes recorded 4 shards; a status run configured for 1 says so.
    await t.redis.set(queueLayoutKey(t.queuePrefix), '4');
    const other = await buildStatusReport({ ...config, redis: { ...config.redis, queueShards: 1 } }, t.redis);
    expect(other.checks.find((c) => c.name === 'queues')).toMatchObject({ status: 'warn', fix: expect.stringContaining('CHATGATE_QUEUE_SHARDS=4') as unknown });
    const depths = await readQueueDepths(turns.shards);
    expect(depths.filter((d) => d.queue === 'turns' && d.state === 'waiting')).toEqual([{ queue: 'turns', state: 'waiting', count: 12 }]);
  });
});
