/**
 * The lines an operator needs where the logs were silent: a refused upload (too large, or a type
 * the bot cannot read), a rate-limited user (one line per user per minute, however fast they
 * send), a gateway with no worker alive for a minute (one warning, then one line when a worker
 * is back), and a turn BullMQ's stalled check finds. Real Redis; the clocks are injected, nothing sleeps.
 */
import { Worker } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Channel } from '../../channels/channel.js';
import { createWebChannel } from '../../channels/web/index.js';
import type { Attachment, InboundMessage } from '../../src/core/inbound.js';
import { createAttachmentIngest } from '../../src/gateway/attachments.js';
import { createIngest, type Ingest } from '../../src/gateway/ingest.js';
import { startWorkerWatch } from '../../src/gateway/worker-watch.js';
import { resolveQueueNames, type TurnJobData } from '../../src/queue/names.js';
import { openShardedQueue } from '../../src/queue/sharded.js';
import { openOutboundQueue } from '../../src/outbound/outbound-queue.js';
import { createTurnProducer, type TurnProducer } from '../../src/queue/producer.js';
import { writeHeartbeat, type HeartbeatRecord } from '../../src/redis/heartbeats.js';
import { heartbeatKeys } from '../../src/redis/keys.js';
import { createRedisSessionView } from '../../src/redis/session-reader.js';
import { createSessionStore } from '../../src/redis/session-store.js';
import { createLlmSessionOps } from '../../src/session/session-ops.js';
import { pngBytes } from '../helpers/files.js';
import { createLogSink, type LogSink } from '../helpers/log-sink.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

const START = Date.UTC(2026, 0, 1, 12, 0, 5);

let t: TestRedis;
let sink: LogSink;
let producer: TurnProducer;
let nowMs: number;

/** An ingest on the test's Redis with the sink's logger, the clock `nowMs`, and a gateway attachment step. */
function openIngest(files: Record<string, Buffer> = {}): Ingest {
  const logger = sink.logger;
  const names = resolveQueueNames({ queuePrefix: t.queuePrefix });
  const store = createSessionStore({ redis: t.redis, logger }, { keyPrefix: t.keyPrefix });
  producer = createTurnProducer({ redis: t.redis }, { ...names, keyPrefix: t.keyPrefix });
  const limits = { model: 'fake-model', summaryModel: 'fake-model', contextWindow: 16_000, reservedOutputTokens: 0 };
  const ops = createLlmSessionOps({ redis: t.redis, logger, store }, { baseURL: 'http://127.0.0.1:9/v1', threshold: 0.5, hygieneThreshold: 0.85, limits, keyPrefix: t.keyPrefix, leaseTtlMs: 10_000 });
  const view = createRedisSessionView({ redis: t.redis }, { keyPrefix: t.keyPrefix, contextWindow: 16_000, reservedOutputTokens: 0, model: 'fake-model', threshold: 0.5, hygieneThreshold: 0.85 });
  const channel: Channel = {
    name: 'telegram', maxMessageLength: 4096, lengthUnit: 'utf16', formatting: 'plain', typingIntervalMs: 1000,
    start: async () => undefined, stop: async () => undefined, send: async () => ({ messageId: '1' }), sendTyping: async () => undefined,
    downloadAttachment: async (attachment) => files[attachment.ref]!,
  };
  const attachments = createAttachmentIngest({ redis: t.redis, log: logger, channel: () => channel }, { keyPrefix: t.keyPrefix, maxBytes: 1024, ttlSeconds: 120, transcription: false });
  return createIngest({ redis: t.redis, producer, ops, outbound: openOutboundQueue(t.redis, names), logger, now: () => nowMs, attachments, commands: { view, turnPosition: async () => ({ state: 'none' }) } }, {
    keyPrefix: t.keyPrefix, allow: { telegram: '*', discord: '*', web: '*', api: '*' }, rateLimitPerMinute: 2, maxMessageChars: 4000, groupMode: 'per-chat',
  });
}

let seq = 0;
function telegram(from: number, text = 'hi', extra: Partial<InboundMessage> = {}): InboundMessage {
  seq++;
  return { id: `telegram:${from}:${seq}`, channel: 'telegram', chatId: String(from), userId: String(from), userName: 'Ada', text, attachments: [], platformMessageId: String(seq), chatType: 'private', receivedAt: nowMs, ...extra };
}

const linesOf = (msg: string) => sink.lines.filter((line) => line.msg === msg);

beforeEach(() => {
  t = createTestRedis();
  sink = createLogSink();
  nowMs = START;
});

afterEach(async () => {
  await producer?.close();
  await t.cleanup();
});

describe('operator log lines', () => {
  it('a rate-limited user is one info line a minute, counting the refusals it held back', async () => {
    const ingest = openIngest();
    const outcomes = [];
    for (let k = 0; k < 6; k++) outcomes.push(await ingest.handle(telegram(42)));
    outcomes.push(await ingest.handle(telegram(43)), await ingest.handle(telegram(43)), await ingest.handle(telegram(43)));
    expect(outcomes.filter((o) => o === 'rate_limited')).toHaveLength(5);
    expect(linesOf('user rate-limited: message refused')).toEqual([
      expect.objectContaining({ level: 30, channel: 'telegram', userId: '42', sessionId: 'telegram:42', limitPerMinute: 2, refusedSinceLastLine: 0 }),
      expect.objectContaining({ level: 30, userId: '43', refusedSinceLastLine: 0 }),
    ]);
    // The next minute: a new rate window, and the line again, with the three it held back.
    nowMs += 60_000;
    for (let k = 0; k < 3; k++) await ingest.handle(telegram(42));
    expect(linesOf('user rate-limited: message refused').map((line) => [line.userId, line.refusedSinceLastLine])).toEqual([['42', 0], ['43', 0], ['42', 3]]);
  });

  it('a refused upload is one info line: too large, or a type the bot cannot read, with type and size but no file name', async () => {
    const ingest = openIngest({ big: Buffer.alloc(5000), fake: Buffer.from('not a picture') });
    const file = (attachment: Partial<Attachment>): Attachment => ({ kind: 'document', ref: 'big', fileName: 'secret-plans.txt', ...attachment });
    expect(await ingest.handle(telegram(7, '', { attachments: [file({ mimeType: 'text/plain' })] }))).toBe('too_large');
    expect(await ingest.handle(telegram(7, '', { attachments: [file({ kind: 'photo', ref: 'fake', fileName: 'secret.png' })] }))).toBe('unsupported');
    expect(await ingest.handle(telegram(8, '', { unsupportedReply: 'I cannot watch videos.', attachments: [file({ kind: 'video', mimeType: 'video/mp4', size: 90_000 })] }))).toBe('unsupported');
    const lines = linesOf('upload refused');
    expect(lines).toEqual([
      expect.objectContaining({ level: 30, channel: 'telegram', userId: '7', sessionId: 'telegram:7', outcome: 'too_large', files: [{ kind: 'document', mimeType: 'text/plain' }] }),
      expect.objectContaining({ outcome: 'unsupported', files: [{ kind: 'photo' }] }),
      expect.objectContaining({ userId: '8', outcome: 'unsupported', files: [{ kind: 'video', mimeType: 'video/mp4', size: 90_000 }] }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('secret');
  });

  it('a web upload over the limit is refused before it is read, with one line', async () => {
    const web = createWebChannel({ log: sink.logger }, { maxUploadBytes: 100 });
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(pngBytes(500))], { type: 'image/png' }), 'holiday.png');
    const response = await web.app.request('/api/chat/c1/messages', { method: 'POST', body: form });
    expect(response.status).toBe(413);
    expect(linesOf('upload refused')).toEqual([expect.objectContaining({ level: 30, channel: 'web', conversationId: 'c1', outcome: 'too_large', limitBytes: 100 })]);
    expect(JSON.stringify(sink.lines)).not.toContain('holiday');
  });

  it('a gateway warns once when no worker has been alive for a minute, and says when one is back', async () => {
    producer = createTurnProducer({ redis: t.redis }, { ...resolveQueueNames({ queuePrefix: t.queuePrefix }), keyPrefix: t.keyPrefix });
    const watch = startWorkerWatch({ redis: t.redis, logger: sink.logger }, { keyPrefix: t.keyPrefix, intervalMs: 0, now: () => nowMs });
    const beat: HeartbeatRecord = {
      role: 'worker', id: 'box:100:aaaaaa', host: 'box', pid: 100, startedAt: START, version: '0.1.0', beatAt: START, ttlMs: 60_000, budgetDigest: 'off',
      worker: { queue: 'turns', concurrency: 1, llm: { model: 'm', summaryModel: 'm', contextWindow: 8192, demo: false }, turnsDone: 0, turnsFailed: 0 },
    };
    const noWorker = () => linesOf('no worker alive: messages wait in the queue until one starts');
    const back = () => linesOf('a worker is alive again: queued messages are answered');
    await watch.run();
    nowMs += 59_000;
    await watch.run();
    expect(noWorker()).toEqual([]);
    nowMs += 1_000;
    await watch.run();
    nowMs += 30_000;
    await watch.run();
    expect(noWorker()).toEqual([expect.objectContaining({ level: 40, component: 'worker-watch', noWorkerForMs: 60_000 })]);
    await writeHeartbeat(t.redis, beat, t.keyPrefix);
    nowMs += 5_000;
    await watch.run();
    await watch.run();
    expect(back()).toEqual([expect.objectContaining({ level: 30, workers: 1, noWorkerForMs: 95_000 })]);
    // It dies: the warning names it, a minute later, once.
    await t.redis.del(heartbeatKeys(t.keyPrefix).live('worker:box:100:aaaaaa'));
    await watch.run();
    nowMs += 60_000;
    await watch.run();
    await watch.run();
    expect(noWorker()).toHaveLength(2);
    expect(noWorker()[1]).toMatchObject({ lastWorker: { host: 'box', pid: 100 } });
    watch.stop();
  });
});

describe('a stalled turn', () => {
  let rig: WorkerRig;
  afterEach(async () => {
    await rig.close();
  });

  it('is one warning from the worker whose stalled check finds it, naming the job', async () => {
    rig = await openWorkerRig();
    const { t: r } = rig;
    await rig.producer.enqueueTurn('telegram:5');
    // A worker takes the job and dies at once: its lock is never renewed.
    const queue = openShardedQueue<TurnJobData>(resolveQueueNames(r.names).turnQueue, r.names, r.redis).forSession('telegram:5');
    const dying = new Worker<TurnJobData>(queue.name, null, { connection: r.redis, prefix: queue.opts.prefix, lockDuration: 200, autorun: false });
    const job = (await dying.getNextJob('dying-token'))!;
    expect(job.data.sessionId).toBe('telegram:5');
    await dying.close();
    const logs = createLogSink();
    await rig.start({ logger: logs.logger, stalledIntervalMs: 100, lockDurationMs: 30_000 });
    const line = await logs.waitFor((l) => l.msg === 'turn stalled: its worker stopped renewing the lock; put back for another worker');
    expect(line).toMatchObject({ level: 40, jobId: job.id, previous: 'active' });
    await queue.close();
  }, 30_000);
});
