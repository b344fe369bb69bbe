/**
 * chatgate on a real Redis Cluster (three masters started here on free ports, never the shared
 * Redis): the CLI connection from REDIS_CLUSTER_NODES, session commits, the turn producer, an agent
 * worker answering through the fake LLM, the outbound queue, a compaction, the gateway's accept
 * script, turn signals and the pending sweeper. Any command or script whose keys span two slots
 * fails here with CROSSSLOT.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliExit, loadCliConfig, connectRedis, type CliIo, type CliRedis } from '../../src/cli/context.js';
import { doctorCommand } from '../../src/cli/doctor.js';
import { compactCommand } from '../../src/cli/maintenance.js';
import { gatewayOptions, sessionOpsOptions, workerOptions } from '../../src/cli/compose.js';
import { sessionsCommand, transcriptCommand, usageCommand } from '../../src/cli/sessions.js';
import type { Config } from '../../src/config.js';
import type { InboundMessage, OutboundMessage } from '../../src/core/inbound.js';
import { acceptInbound, countInWindow } from '../../src/redis/ingest.js';
import { startGateway, type GatewayHandle } from '../../src/gateway/index.js';
import { startPendingSweeper } from '../../src/gateway/sweeper.js';
import { createSilentLogger } from '../../src/log.js';
import { createTurnProducer, type TurnProducer } from '../../src/queue/producer.js';
import { TURN_SIGNALS, type TurnSignal } from '../../src/queue/signals.js';
import { duplicateRedis } from '../../src/redis/client.js';
import { pendingIndexKey, rateLimitKey, seenKey, sessionIndexKey } from '../../src/redis/keys.js';
import { acquireLease, releaseLease } from '../../src/redis/lease.js';
import { createSessionStore, toEntry, type SessionStore } from '../../src/redis/session-store.js';
import { isEffectiveCompaction } from '../../src/core/session-figures.js';
import { createRedisSessionView } from '../../src/redis/session-reader.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { createLlmSessionOps } from '../../src/session/session-ops.js';
import { runWorker, type RunningWorker } from '../../workers/main.js';
import { startFakeOpenAI, type FakeOpenAI, type FakeRequest } from '../fakes/openai-server.js';
import { compiledCli } from '../helpers/cli-process.js';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.js';
import { collectOutbound } from '../helpers/redis.js';
import { pollUntil } from '../helpers/waits.js';
import { TokenCounter } from '../../src/core/tokens.js';
import { createBudgetLedger } from '../../src/budget/ledger.js';
import { listCommand, resetCommand, setCommand } from '../../src/cli/budgets.js';
import { watchBudgetMarkers } from '../../src/budget/markers.js';

const TOKENS = new TokenCounter();

const logger = createSilentLogger();
let cluster: TestCluster;
let fake: FakeOpenAI;
const isAgent = (r: FakeRequest) => !String(r.messages[0]?.content).startsWith('You write handoff summaries');
let seq = 0;

function inbound(text: string, chatId: string): InboundMessage {
  seq++;
  return { id: `web:${chatId}:${seq}`, channel: 'web', chatId, userId: 'u1', userName: 'Ann', text, attachments: [], receivedAt: Date.now() };
}

/** CLI I/O whose environment points at the test cluster and the fake LLM, with `env` on top; `out` collects. */
function cliIo(env: Record<string, string> = {}): CliIo & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines, out: (text) => lines.push(text), err: () => undefined,
    env: { REDIS_CLUSTER_NODES: cluster.seeds, OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'test-key', CHATGATE_CONTEXT_WINDOW: '16000', ...env },
  };
}

/** The CLI's configuration and connection for the test cluster, with `env` on top. */
async function connect(env: Record<string, string> = {}): Promise<{ config: Config; conn: CliRedis }> {
  const io = cliIo(env);
  const config = loadCliConfig(io);
  return { config, conn: await connectRedis(io, config, logger) };
}

beforeAll(async () => {
  cluster = await startTestCluster();
  fake = await startFakeOpenAI((r) => (isAgent(r) ? { content: `answer ${r.index}` } : { content: 'summary of the chat so far' }));
});

afterAll(async () => {
  await fake?.close();
  await cluster?.stop();
});

/** Replies taken from the outbound streams by the gateway's consumer on the cluster connection. */
async function collectReplies(conn: CliRedis, config: Config) {
  const collector = await collectOutbound({ redis: conn.redis, names: { queuePrefix: config.redis.queuePrefix, queueShards: config.redis.queueShards } });
  const waitFor = async (count: number): Promise<OutboundMessage[]> => {
    await collector.waitFor((replies) => replies.length >= count);
    return collector.replies;
  };
  return { replies: collector.replies, close: () => collector.close(), waitFor };
}

describe('on a Redis Cluster', () => {
  let conn: CliRedis;
  let config: Config;
  let store: SessionStore;
  let producer: TurnProducer;
  let worker: RunningWorker;
  let out: Awaited<ReturnType<typeof collectReplies>>;

  beforeAll(async () => {
    ({ config, conn } = await connect());
    store = createSessionStore({ redis: conn.redis, logger }, { keyPrefix: config.redis.keyPrefix });
    producer = createTurnProducer({ redis: conn.redis }, { keyPrefix: config.redis.keyPrefix, queuePrefix: config.redis.queuePrefix });
    worker = await runWorker({ redis: conn.redis, logger }, { ...workerOptions(config), concurrency: 2 });
    out = await collectReplies(conn, config);
  });

  afterAll(async () => {
    await worker?.close();
    await out?.close();
    await producer?.close();
    await conn?.close();
  });

  it('connects through REDIS_CLUSTER_NODES to a cluster whose slots are spread over the masters', async () => {
    expect(conn.redis).toBeInstanceOf(Cluster);
    expect(conn.resolved).toMatchObject({ source: 'cluster', url: `redis-cluster://${cluster.seeds}` });
    const failFastRedis = duplicateRedis(conn.redis, { maxRetriesPerRequest: 2 });
    expect(failFastRedis).toBeInstanceOf(Cluster);
    expect((failFastRedis as Cluster).options.redisOptions?.maxRetriesPerRequest).toBe(2);
    expect(await failFastRedis.ping()).toBe('PONG');
    failFastRedis.disconnect();
    const slotOf = async (key: string) => Number(await cluster.cli(cluster.ports[0], 'cluster', 'keyslot', key));
    const slots = new Set([await slotOf(store.keys('web:a').meta), await slotOf(store.keys('web:b').meta), await slotOf(`${config.redis.queuePrefix}:turns:wait`), await slotOf(pendingIndexKey(config.redis.keyPrefix))]);
    expect(slots.size).toBe(4);
  });

  it('commits a session atomically and indexes it', async () => {
    const keys = store.keys('web:commit');
    const fence = (await acquireLease(conn.redis, keys))!;
    const user = toEntry({ role: 'user', content: 'order ORD-1' }, TOKENS);
    const version = await store.commit('web:commit', { expectedVersion: 0, fence, projection: { append: [user] }, transcript: [{ type: 'message', message: user.message, tokens: user.tokens, atMs: 1 }] });
    expect(version).toBe(1);
    expect((await store.load('web:commit')).entries).toEqual([user]);
    expect(await releaseLease(conn.redis, keys, fence)).toBe(true);
    expect(await conn.redis.zscore(sessionIndexKey(config.redis.keyPrefix), 'web:commit')).not.toBeNull();
  });

  it('answers submitted messages through the worker, signals the turn, and compacts the session', async () => {
    let ended = (_signal: TurnSignal): void => undefined;
    const turnEnded = new Promise<TurnSignal>((resolve) => { ended = resolve; });
    const unsubscribe = await TURN_SIGNALS.subscribe(duplicateRedis(conn.redis), (signal) => {
      if (signal.type === 'turn-ended') ended(signal);
    }, config.redis.keyPrefix);
    const before = out.replies.length;
    for (let i = 0; i < 6; i++) {
      await producer.submitInbound(inbound(`message ${i} with a few words worth summarising later`, 'flow'));
      await out.waitFor(before + i + 1);
    }
    const replies = out.replies.slice(before);
    expect(replies.map((r) => r.sessionId)).toEqual(Array(6).fill('web:flow'));
    expect(replies.every((r) => r.kind === 'reply' && r.text.startsWith('answer'))).toBe(true);
    expect(await turnEnded).toMatchObject({ type: 'turn-ended', sessionId: 'web:flow' });
    await unsubscribe();
    // The reply is enqueued before the worker releases the session's lease; compact once it is free.
    await pollUntil(async () => (await conn.redis.exists(store.keys('web:flow').lease)) === 0, { intervalMs: 20, timeoutMs: 15_000, what: 'lease released' });

    const ops = createLlmSessionOps({ redis: conn.redis, logger, store }, sessionOpsOptions(config, 10_000));
    const result = await ops.compact('web:flow');
    expect(result.busy).toBe(false);
    const events = (await readTranscript(conn.redis, store.keys('web:flow'))).filter((e) => e.type === 'compaction');
    expect(events).toHaveLength(1);
    expect((await store.load('web:flow')).meta.version).toBeGreaterThan(6);
    const reader = createRedisSessionView({ redis: conn.redis }, { keyPrefix: config.redis.keyPrefix, contextWindow: config.llm.contextWindow });
    for (const sort of ['lastActivity', 'fill'] as const) {
      expect((await reader.listSessions({ sort })).items.map((row) => row.id)).toContain('web:flow');
    }
  });

  it('runs the operator commands (sessions, usage, transcript, compact) against the cluster', async () => {
    const list = cliIo();
    expect(await sessionsCommand(list, { sort: 'fill', json: true, limit: 50 })).toBe(0);
    expect((JSON.parse(list.lines.join('\n')) as { items: Array<{ id: string }> }).items.map((row) => row.id)).toContain('web:flow');
    const usage = cliIo();
    expect(await usageCommand(usage, 'web:flow', { json: true })).toBe(0);
    // Only compactions that changed the projection count; the forced one above may have been a no-op.
    const effective = (await readTranscript(conn.redis, store.keys('web:flow'))).filter((e) => e.type === 'compaction' && isEffectiveCompaction(e.outcome));
    expect(JSON.parse(usage.lines.join('\n'))).toMatchObject({ session: { id: 'web:flow', compactions: effective.length }, ledger: { compactionsByLayer: { manual: expect.any(Object) } } });
    const transcript = cliIo();
    expect(await transcriptCommand(transcript, 'web:flow', { jsonl: true })).toBe(0);
    expect(transcript.lines.length).toBeGreaterThanOrEqual(13);
    expect(await compactCommand(cliIo(), 'web:flow', {})).toBe(0);
    expect((await readTranscript(conn.redis, store.keys('web:flow'))).filter((e) => e.type === 'compaction')).toHaveLength(2);
    const doctor = cliIo();
    await doctorCommand(doctor, { timeoutMs: 2000 });
    expect(doctor.lines.find((line) => line.includes(' redis '))).toMatch(new RegExp(`^ok +redis +Redis [\\d.]+ at redis-cluster://${cluster.seeds} \\(cluster\\)$`));
    expect(doctor.lines.find((line) => line.includes(' queues '))).toMatch(/^ok +queues +turns: 0 waiting, 0 active/);
  });

  it('reserves and settles budgets in one script on the {budget} slot, and `chatgate budgets` lists and sets them', async () => {
    const limits = { CHATGATE_BUDGET_USER_DAILY_TOKENS: '1000' };
    const settings = loadCliConfig(cliIo(limits)).budgets;
    const ledger = createBudgetLedger(conn.redis, { keyPrefix: config.redis.keyPrefix, settings });
    // A gateway's copy of the exhaustion markers hears the script's announcements through the cluster.
    const markers = await watchBudgetMarkers({ redis: conn.redis, subscriber: duplicateRedis(conn.redis), logger }, { keyPrefix: config.redis.keyPrefix });
    try {
      const gateway = createBudgetLedger(conn.redis, { keyPrefix: config.redis.keyPrefix, settings, markers });
      const scope = { user: 'web:u1', chat: 'web:budget' };
      expect(markers.live).toBe(true);
      expect(await gateway.check(scope)).toBeNull();
      const reserved = await ledger.reserve(scope, { tokens: 100 });
      if (!('id' in reserved)) throw new Error('refused');
      await ledger.settle(scope, reserved.id, { tokens: 1000 });
      expect(await ledger.check(scope)).toMatchObject({ level: 'user', unit: 'tokens', limit: 1000 });
      await pollUntil(async () => (await gateway.check(scope)) !== null, { timeoutMs: 5000, what: 'the gateway hears the marker' });
      const set = cliIo(limits);
      expect(await setCommand(set, 'user', 'web:u1', { dailyTokens: 5000 })).toBe(0);
      expect(await ledger.check(scope)).toBeNull();
      await pollUntil(async () => (await gateway.check(scope)) === null, { timeoutMs: 5000, what: 'the gateway hears the marker dropped' });
      const list = cliIo(limits);
      expect(await listCommand(list, { json: true })).toBe(0);
      expect(JSON.parse(list.lines.join('\n'))).toMatchObject({ limits: [expect.objectContaining({ level: 'user', subject: 'web:u1', period: 'day', used: 1000, limit: 5000, left: 4000, source: 'override' })] });
      // Back to 1,000: the next call leaves the marker again; a reset of the usage drops it (DEL and PUBLISH in one MULTI).
      expect(await setCommand(cliIo(limits), 'user', 'web:u1', { dailyTokens: 1000 })).toBe(0);
      expect(await ledger.reserve(scope, { tokens: 100 })).toMatchObject({ breach: { level: 'user' } });
      await pollUntil(async () => (await gateway.check(scope)) !== null, { timeoutMs: 5000, what: 'the gateway hears the marker again' });
      expect(await resetCommand(cliIo(limits), 'user', 'web:u1', { usage: true })).toBe(0);
      await pollUntil(async () => (await gateway.check(scope)) === null, { timeoutMs: 5000, what: 'the gateway hears the reset' });
    } finally {
      await markers.close();
    }
  });

  it('accepts a message once, counts the rate window, and the sweeper gives a stranded inbox its turn', async () => {
    const sessionId = 'web:swept';
    const keys = store.keys(sessionId);
    const message = inbound('left behind by a crashed gateway', 'swept');
    const accept = { sessionId, message, keyPrefix: config.redis.keyPrefix, dedupeTtlSeconds: 3600, nowMs: Date.now() };
    expect((await acceptInbound(conn.redis, accept)).kind).toBe('accepted');
    expect((await acceptInbound(conn.redis, accept)).kind).toBe('duplicate');
    expect(await conn.redis.exists(seenKey(sessionId, message.id, config.redis.keyPrefix))).toBe(1);
    expect(await conn.redis.llen(keys.inbox)).toBe(1);
    const window = rateLimitKey('web', 'u1', 1, config.redis.keyPrefix);
    expect([await countInWindow(conn.redis, window, 60), await countInWindow(conn.redis, window, 60)]).toEqual([1, 2]);

    const index = pendingIndexKey(config.redis.keyPrefix);
    await conn.redis.zadd(index, Date.now() - 60_000, sessionId);
    const before = out.replies.length;
    const sweeper = startPendingSweeper({ redis: conn.redis, producer, logger }, { keyPrefix: config.redis.keyPrefix, sweepAtStart: false });
    try {
      expect(await sweeper.run()).toBe(1);
    } finally {
      sweeper.stop();
    }
    expect(await conn.redis.zscore(index, sessionId)).toBeNull();
    const replies = await out.waitFor(before + 1);
    expect(replies[before]).toMatchObject({ sessionId, kind: 'reply' });
    expect(await conn.redis.llen(keys.inbox)).toBe(0);
  });
});

describe('the gateway on a Redis Cluster', () => {
  let conn: CliRedis;
  let gateway: GatewayHandle;
  let worker: RunningWorker;

  beforeAll(async () => {
    let config: Config;
    ({ config, conn } = await connect({ CHATGATE_KEY_PREFIX: 'gw:', CHATGATE_QUEUE_PREFIX: '{gwq}', CHATGATE_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'silent' }));
    const sessions = createRedisSessionView({ redis: conn.redis }, { keyPrefix: config.redis.keyPrefix, contextWindow: config.llm.contextWindow });
    gateway = await startGateway({ redis: conn.redis, logger, sessions }, gatewayOptions(config));
    worker = await runWorker({ redis: conn.redis, logger }, workerOptions(config));
  });

  afterAll(async () => {
    await worker?.close();
    await gateway?.close();
    await conn?.close();
  });

  it('takes a web chat message in, and delivers the worker\'s reply back to the chat', async () => {
    const base = gateway.httpUrl;
    const posted = await fetch(`${base}/api/chat/conv-1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'hello over the cluster' }) });
    expect(posted.ok).toBe(true);
    const polled = await pollUntilReply(`${base}/api/chat/conv-1/messages`);
    expect(polled.messages.map((m) => m.text)).toEqual([expect.stringMatching(/^answer \d+$/)]);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });
});

describe('an unreachable Redis Cluster', () => {
  it('ends the command with exit 1 and advice when it is not ready in time', async () => {
    const io = { ...cliIo({ REDIS_CLUSTER_NODES: '127.0.0.1:1' }), errors: [] as string[] };
    io.err = (text) => io.errors.push(text);
    const config = loadCliConfig(io);
    const refused = await connectRedis(io, config, logger, { clusterReadyTimeoutMs: 300 }).then(() => null, (err: unknown) => err);
    expect(refused).toBeInstanceOf(CliExit);
    expect((refused as CliExit).exitCode).toBe(1);
    expect(io.errors[0]).toMatch(/^chatgate: the Redis Cluster at redis-cluster:\/\/127\.0\.0\.1:1 was not ready within 0\.3 s/);
    expect(io.errors[1]).toContain('REDIS_CLUSTER_NODES');
  });
});

describe('chatgate start on a Redis Cluster', () => {
  it('connects through REDIS_CLUSTER_NODES (starting no redis-server), answers in the web chat, and stops on SIGTERM', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'cgcluster-start-'));
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', REDIS_CLUSTER_NODES: cluster.seeds, CHATGATE_KEY_PREFIX: 'st:',
      CHATGATE_QUEUE_PREFIX: '{stq}', CHATGATE_HTTP_PORT: '0', CHATGATE_STATE_DIR: stateDir, CHATGATE_LOG_LEVEL: 'warn',
      CHATGATE_DEMO_WORD_DELAY_MS: '0', // the whole reply at once (~4 s at the default pace)
    };
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const child = spawn(process.execPath, [...compiledCli(), '--no-dotenv', 'start', '--demo'], { cwd: root, env });
    const output = { stdout: '', stderr: '' };
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const webChat = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => { output.stdout += chunk.toString(); });
        child.stderr.on('data', (chunk: Buffer) => {
          output.stderr += chunk.toString();
          const match = /Web chat: +(\S+)\/chat/.exec(output.stderr);
          if (match) resolve(match[1]);
        });
        void exited.then((code) => reject(new Error(`chatgate exited (${code}):\n${output.stdout}\n${output.stderr}`)));
      });
      expect(output.stderr).toContain(`using Redis at redis-cluster://${cluster.seeds} (cluster)`);
      const posted = await fetch(`${webChat}/api/chat/conv-9/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'hello' }) });
      expect(posted.ok).toBe(true);
      const polled = await pollUntilReply(`${webChat}/api/chat/conv-9/messages`);
      expect(polled.messages).toHaveLength(1);
      expect(polled.messages[0].text.length).toBeGreaterThan(0);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(existsSync(join(stateDir, 'redis'))).toBe(false);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});

/** Long-polls `url` until a reply is there (a poll also answers early, without replies, while a streamed reply is written). */
async function pollUntilReply(url: string): Promise<{ messages: Array<{ text: string }> }> {
  let after = '0';
  for (;;) {
    const page = (await (await fetch(`${url}?after=${encodeURIComponent(after)}&timeoutMs=20000`)).json()) as { messages: Array<{ text: string }>; next: string };
    if (page.messages.length > 0) return page;
    after = page.next;
  }
}
