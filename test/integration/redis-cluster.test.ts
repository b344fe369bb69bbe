/**
 * chatgate on a real Redis Cluster (three masters started here on free ports, never the shared
 * Redis): the CLI connection from REDIS_CLUSTER_NODES, session commits, the turn producer, an agent
 * worker answering through the fake LLM, the outbound queue, a compaction, the gateway's accept
 * script, turn signals and the pending sweeper. Any command or script whose keys span two slots
 * fails here with CROSSSLOT.
 */
import { Worker } from 'bullmq';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCliConfig, connectRedis, type CliIo, type CliRedis } from '../../src/cli/context.js';
import { workerOptionsFromConfig } from '../../src/cli/run.js';
import type { Config } from '../../src/config.js';
import type { InboundMessage, OutboundMessage } from '../../src/core/inbound.js';
import { acceptInbound, countInWindow } from '../../src/gateway/accept.js';
import { startPendingSweeper } from '../../src/gateway/sweeper.js';
import { createSilentLogger } from '../../src/log.js';
import { createTurnProducer, type TurnProducer } from '../../src/queue/producer.js';
import { subscribeTurnSignals, type TurnSignal } from '../../src/queue/signals.js';
import { duplicateRedis } from '../../src/redis/client.js';
import { pendingIndexKey, rateLimitKey, seenKey, sessionIndexKey } from '../../src/redis/keys.js';
import { acquireLease, releaseLease } from '../../src/redis/lease.js';
import { createSessionStore, toEntry, type SessionStore } from '../../src/redis/session-store.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { createSessionOpsFromConfig } from '../../src/session/session-ops.js';
import { runWorker, type RunningWorker } from '../../workers/main.js';
import { startFakeOpenAI, type FakeOpenAI, type FakeRequest } from '../fakes/openai-server.js';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.js';

const logger = createSilentLogger();
const isAgent = (r: FakeRequest) => !String(r.messages[0]?.content).startsWith('You write handoff summaries');
let seq = 0;

function inbound(text: string, chatId: string): InboundMessage {
  seq++;
  return { id: `web:${chatId}:${seq}`, channel: 'web', chatId, userId: 'u1', userName: 'Ann', text, attachments: [], receivedAt: Date.now() };
}

/** Replies taken from the outbound queue by a BullMQ worker on the cluster connection. */
function collectReplies(conn: CliRedis, config: Config) {
  const replies: OutboundMessage[] = [];
  const waiters: Array<() => void> = [];
  const worker = new Worker<OutboundMessage>('outbound', async (job) => {
    replies.push(job.data);
    for (const wake of waiters.splice(0)) wake();
  }, { connection: conn.redis, prefix: config.redis.queuePrefix, concurrency: 1 });
  const waitFor = async (count: number): Promise<OutboundMessage[]> => {
    while (replies.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    return replies;
  };
  return { replies, worker, waitFor };
}

describe('on a Redis Cluster', () => {
  let cluster: TestCluster;
  let fake: FakeOpenAI;
  let conn: CliRedis;
  let config: Config;
  let store: SessionStore;
  let producer: TurnProducer;
  let worker: RunningWorker;
  let out: ReturnType<typeof collectReplies>;

  beforeAll(async () => {
    cluster = await startTestCluster();
    fake = await startFakeOpenAI((r) => (isAgent(r) ? { content: `answer ${r.index}` } : { content: 'summary of the chat so far' }));
    const io: CliIo = {
      out: () => undefined, err: () => undefined,
      env: { REDIS_CLUSTER_NODES: cluster.seeds, OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'test-key', CHATGATE_CONTEXT_WINDOW: '16000' },
    };
    config = loadCliConfig(io);
    conn = await connectRedis(io, config, logger);
    store = createSessionStore({ redis: conn.redis, logger }, { keyPrefix: config.redis.keyPrefix });
    producer = createTurnProducer({ redis: conn.redis }, { keyPrefix: config.redis.keyPrefix, queuePrefix: config.redis.queuePrefix });
    worker = await runWorker({ ...workerOptionsFromConfig(config, conn.redis, logger), concurrency: 2 });
    out = collectReplies(conn, config);
    await out.worker.waitUntilReady();
  });

  afterAll(async () => {
    await worker?.close();
    await out?.worker.close();
    await producer?.close();
    await conn?.close();
    await fake?.close();
    await cluster?.stop();
  });

  it('connects through REDIS_CLUSTER_NODES to a cluster whose slots are spread over the masters', async () => {
    expect(conn.redis).toBeInstanceOf(Cluster);
    expect(conn.resolved).toMatchObject({ source: 'cluster', url: `redis-cluster://${cluster.seeds}` });
    const slotOf = async (key: string) => Number(await cluster.cli(cluster.ports[0], 'cluster', 'keyslot', key));
    const slots = new Set([await slotOf(store.keys('web:a').meta), await slotOf(store.keys('web:b').meta), await slotOf(`${config.redis.queuePrefix}:turns:wait`), await slotOf(pendingIndexKey(config.redis.keyPrefix))]);
    expect(slots.size).toBe(4);
  });

  it('commits a session atomically and indexes it', async () => {
    const keys = store.keys('web:commit');
    const fence = (await acquireLease(conn.redis, keys))!;
    const user = toEntry({ role: 'user', content: 'order ORD-1' });
    const version = await store.commit('web:commit', { expectedVersion: 0, fence, projection: { append: [user] }, transcript: [{ type: 'message', message: user.message, tokens: user.tokens, atMs: 1 }] });
    expect(version).toBe(1);
    expect((await store.load('web:commit')).entries).toEqual([user]);
    expect(await releaseLease(conn.redis, keys, fence)).toBe(true);
    expect(await conn.redis.zscore(sessionIndexKey(config.redis.keyPrefix), 'web:commit')).not.toBeNull();
  });

  it('answers submitted messages through the worker, signals the turn, and compacts the session', async () => {
    const signals: TurnSignal[] = [];
    const unsubscribe = await subscribeTurnSignals(duplicateRedis(conn.redis), (signal) => signals.push(signal), config.redis.keyPrefix);
    const before = out.replies.length;
    for (let i = 0; i < 6; i++) {
      await producer.submitInbound(inbound(`message ${i} with a few words worth summarising later`, 'flow'));
      await out.waitFor(before + i + 1);
    }
    const replies = out.replies.slice(before);
    expect(replies.map((r) => r.sessionId)).toEqual(Array(6).fill('web:flow'));
    expect(replies.every((r) => r.kind === 'reply' && r.text.startsWith('answer'))).toBe(true);
    expect(signals.some((s) => s.type === 'turn-ended' && s.sessionId === 'web:flow')).toBe(true);
    await unsubscribe();

    const ops = createSessionOpsFromConfig({ redis: conn.redis, logger, store }, config, { leaseTtlMs: 10_000 });
    const result = await ops.compact('web:flow');
    expect(result.busy).toBe(false);
    const events = (await readTranscript(conn.redis, store.keys('web:flow'))).filter((e) => e.type === 'compaction');
    expect(events).toHaveLength(1);
    expect((await store.load('web:flow')).meta.version).toBeGreaterThan(6);
  });

  it('accepts a message once, counts the rate window, and the sweeper gives a stranded inbox its turn', async () => {
    const sessionId = 'web:swept';
    const keys = store.keys(sessionId);
    const message = inbound('left behind by a crashed gateway', 'swept');
    const seen = seenKey(sessionId, message.id, config.redis.keyPrefix);
    expect(await acceptInbound(conn.redis, keys, seen, message, 3600)).toBe(true);
    expect(await acceptInbound(conn.redis, keys, seen, message, 3600)).toBe(false);
    expect(await conn.redis.llen(keys.inbox)).toBe(1);
    const window = rateLimitKey('web', 'u1', 1, config.redis.keyPrefix);
    expect([await countInWindow(conn.redis, window, 60), await countInWindow(conn.redis, window, 60)]).toEqual([1, 2]);

    const index = pendingIndexKey(config.redis.keyPrefix);
    await conn.redis.zadd(index, Date.now() - 60_000, sessionId);
    const before = out.replies.length;
    const sweeper = startPendingSweeper({ redis: conn.redis, producer, logger }, { keyPrefix: config.redis.keyPrefix, sweepAtStart: false });
    try {
      expect(await sweeper.sweep()).toBe(1);
    } finally {
      sweeper.stop();
    }
    expect(await conn.redis.zscore(index, sessionId)).toBeNull();
    const replies = await out.waitFor(before + 1);
    expect(replies[before]).toMatchObject({ sessionId, kind: 'reply' });
    expect(await conn.redis.llen(keys.inbox)).toBe(0);
  });
});
