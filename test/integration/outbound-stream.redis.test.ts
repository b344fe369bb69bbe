/**
 * The outbound transport on Redis Streams: idempotent enqueue, the delayed set (rate limits spend
 * no attempt, concurrent promoters move an entry once), attempts used up, a dead gateway's
 * pending replies claimed by a live one, malformed entries and a prompt close.
 */
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CHANNEL_ERROR_CODES } from '../../channels/channel.js';
import type { OutboundMessage } from '../../src/core/inbound.js';
import { ChannelError } from '../../src/errors.js';
import { createOutboundConsumer, type OutboundConsumerOptions, type OutboundOutcome } from '../../src/outbound/consumer.js';
import { createSilentLogger } from '../../src/log.js';
import { enqueueOutbound, openOutboundQueue, type OutboundQueue } from '../../src/outbound/outbound-queue.js';
import { buildStatusReport } from '../../src/cli/status-report.js';
import { loadConfig } from '../../src/config.js';
import { createLogSink } from '../helpers/log-sink.js';
import { createTestRedis, readOutboundStreams, type TestRedis } from '../helpers/redis.js';
import { recordingDelivery } from '../helpers/outbound-delivery.js';
import type { Delivery } from '../../src/outbound/delivery.js';
import { pollUntil, waitUntil } from '../helpers/waits.js';

const QUEUE = 'outbound';

const reply = (n: number, chat = 'chat'): OutboundMessage => ({ id: `reply-${chat}-${n}`, sessionId: `web:${chat}`, channel: 'web', chatId: chat, text: `reply ${n} to ${chat}`, kind: 'reply' });

describe('outbound streams', () => {
  let t: TestRedis;
  let queue: OutboundQueue;
  const events = new EventEmitter();
  const outcomes: OutboundOutcome[] = [];
  const closers: Array<() => Promise<unknown>> = [];

  beforeEach(() => {
    t = createTestRedis();
    // One shard: the tests reach into its keys.
    queue = openOutboundQueue(t.redis, { queuePrefix: t.queuePrefix, queueShards: 1, outboundQueue: QUEUE });
  });

  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    outcomes.splice(0);
    events.removeAllListeners();
    await t.cleanup();
  });

  const shard = () => queue.shards[0]!;

  /** A consumer whose delivery records each reply, or throws what `fail(message, calls)` returns. */
  function startConsumer(fail: (message: OutboundMessage, calls: number) => Error | undefined = () => undefined, options: Partial<OutboundConsumerOptions> = {}) {
    const { delivery, delivered, calls } = recordingDelivery({ fail });
    const onOutcome = (outcome: OutboundOutcome) => {
      outcomes.push(outcome);
      events.emit('outcome');
    };
    const consumer = createOutboundConsumer({ redis: t.redis, delivery, logger: createSilentLogger(), onOutcome }, {
      queuePrefix: t.queuePrefix, outboundQueue: QUEUE, retry: { baseDelayMs: 1, maxDelayMs: 5 }, ...options,
    });
    closers.push(() => consumer.close());
    return { consumer, delivered, calls };
  }

  const settled = (n: number, type?: OutboundOutcome['type']) => waitUntil(events, 'outcome', () => outcomes.filter((o) => (type ? o.type === type : o.type !== 'delayed')).length >= n);

  it('re-adding a reply that is waiting, delivered or failed is a no-op', async () => {
    expect(await queue.add(reply(1))).toBe(true);
    expect(await queue.add(reply(1))).toBe(false); // waiting
    const { delivered } = startConsumer((message) => message.id === reply(2).id ? new ChannelError('blocked', { retryable: false, code: CHANNEL_ERROR_CODES.permanent }) : undefined);
    await enqueueOutbound(queue, reply(2));
    await settled(2);
    await enqueueOutbound(queue, reply(1)); // delivered
    await enqueueOutbound(queue, reply(2)); // failed for good
    expect(await readOutboundStreams(t)).toEqual([]);
    expect(delivered).toEqual([reply(1).id]);
    expect(await queue.counts()).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 1 });
  });

  it('a rate-limited reply comes back when due and spends no attempt', async () => {
    const limited = () => new ChannelError('slow down', { retryable: true, code: CHANNEL_ERROR_CODES.rateLimited, retryAfterMs: 50 });
    const { delivered, calls } = startConsumer((_m, n) => (n <= 2 ? limited() : undefined));
    await enqueueOutbound(queue, reply(1));
    await settled(1, 'delivered');
    expect(delivered).toEqual([reply(1).id]);
    expect(calls.get(reply(1).id)).toBe(3);
    expect(outcomes.filter((o) => o.type === 'delayed')).toMatchObject([{ why: 'rate_limited', attempts: 0 }, { why: 'rate_limited', attempts: 0 }]);
    expect(outcomes.at(-1)).toEqual({ type: 'delivered', id: reply(1).id, attempts: 1 });
  });

  it('attempts used up: failed for good with its reason, counted and shown by `chatgate status`', async () => {
    const { calls } = startConsumer(() => new ChannelError('send failed for web:chat (503)', { retryable: true, code: CHANNEL_ERROR_CODES.transient }));
    await enqueueOutbound(queue, reply(1));
    await settled(1, 'failed');
    expect(calls.get(reply(1).id)).toBe(8);
    expect(await queue.counts()).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 1 });
    expect(await queue.failed()).toEqual([expect.objectContaining({ id: reply(1).id, attempts: 8, reason: 'send failed for web:chat (503)', message: reply(1) })]);
    const config = loadConfig({ REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, OPENAI_API_KEY: 'k', CHATGATE_LOG_LEVEL: 'silent' });
    const report = await buildStatusReport(config, t.redis);
    expect(report.queues.outbound).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 1 });
    expect(report.checks.find((c) => c.name === 'failed')).toMatchObject({ status: 'warn', detail: expect.stringContaining(`${reply(1).id} to web:chat: send failed for web:chat (503)`) });
    expect(report.checks.find((c) => c.name === 'queues')?.detail).toContain('outbound: 0 waiting, 0 active, 0 delayed, 1 failed');
  });

  it('a gateway that read replies and died: a live consumer delivers them after the lock duration, once', async () => {
    for (const n of [1, 2, 3]) await enqueueOutbound(queue, reply(n, `c${n}`));
    await shard().ensureGroup();
    const dead = await shard().read(t.redis, 'dead-gateway', 10, 10);
    expect(dead).toHaveLength(3);
    expect((await queue.counts()).active).toBe(3);
    const { delivered } = startConsumer(undefined, { lockDurationMs: 200, stalledIntervalMs: 50 });
    await settled(3, 'delivered');
    expect(delivered.sort()).toEqual([reply(1, 'c1').id, reply(2, 'c2').id, reply(3, 'c3').id]);
    expect(await queue.counts()).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 0 });
  });

  it('renewing a claim keeps a reply with its consumer, but leaves one another consumer took over to it', async () => {
    await enqueueOutbound(queue, reply(1));
    await enqueueOutbound(queue, reply(2));
    await shard().ensureGroup();
    const [first, second] = await shard().read(t.redis, 'gateway-a', 10, 100);
    // Gateway A stalled past the lock: gateway B claimed the second reply.
    await t.redis.call('XCLAIM', shard().keys.stream, 'gateways', 'gateway-b', 0, second!.entryId, 'JUSTID');
    expect(await shard().renew('gateway-a', [first!.entryId, second!.entryId])).toBe(1);
    const owners = (await t.redis.xpending(shard().keys.stream, 'gateways', '-', '+', 10)) as Array<[string, string, number, number]>;
    expect(owners.map(([id, owner]) => [id, owner])).toEqual([[first!.entryId, 'gateway-a'], [second!.entryId, 'gateway-b']]);
  });

  it('renewing a reply already settled (acknowledged) counts nothing as taken over', async () => {
    await enqueueOutbound(queue, reply(1));
    await shard().ensureGroup();
    const [entry] = await shard().read(t.redis, 'gateway-a', 10, 100);
    expect(await shard().ack(entry!.entryId, reply(1))).toBe(true);
    expect(await shard().renew('gateway-a', [entry!.entryId])).toBe(0);
  });

  it('a renewal right after a delivery was acknowledged raises no take-over warning (one gateway)', async () => {
    const sink = createLogSink('debug');
    const { delivery } = recordingDelivery();
    const LOCK_MS = 60_000;
    let renewals = 0;
    // The renewal timer (setInterval) is driven by the test: it fires once the reply is acknowledged, before its slot is freed.
    vi.useFakeTimers({ toFake: ['setInterval'] });
    try {
      const delivered = new Promise<void>((resolve) => {
        const onDelivered = () => {
          vi.advanceTimersByTime(LOCK_MS / 2);
          renewals++;
          resolve();
        };
        const consumer = createOutboundConsumer({ redis: t.redis, delivery, logger: sink.logger, onDelivered }, { queuePrefix: t.queuePrefix, outboundQueue: QUEUE, lockDurationMs: LOCK_MS });
        closers.push(() => consumer.close());
      });
      await enqueueOutbound(queue, reply(1));
      await delivered;
      // The renewal's script ran after the ack on the same connection: once a later command is answered, so is it.
      await t.redis.ping();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      vi.useRealTimers();
    }
    expect(renewals).toBe(1);
    expect(sink.lines.filter((line) => /taken over/.test(line.msg))).toEqual([]);
  });

  it('a reply interrupted more than maxStalledCount times fails for good', async () => {
    await enqueueOutbound(queue, reply(1));
    await shard().ensureGroup();
    await shard().read(t.redis, 'dead-gateway', 10, 10);
    const { delivered } = startConsumer(undefined, { lockDurationMs: 100, stalledIntervalMs: 50, maxStalledCount: 0 });
    await settled(1);
    expect(delivered).toEqual([]);
    expect(outcomes).toEqual([expect.objectContaining({ type: 'failed', id: reply(1).id, reason: expect.stringContaining('interrupted by a dying gateway 1 times') })]);
  });

  it('two promoters racing on the same due entry move it once: delivered once', async () => {
    await enqueueOutbound(queue, reply(1));
    await shard().ensureGroup();
    const [entry] = await shard().read(t.redis, 'gateway-a', 1, 10);
    expect(await shard().delay(entry!.entryId, reply(1).id, Date.now() - 1, { data: entry!.fields.data!, attempts: 0, enqueuedAtMs: Date.now() })).toBe(true);
    const other = t.redis.duplicate();
    try {
      const other2 = openOutboundQueue(other, { queuePrefix: t.queuePrefix, queueShards: 1, outboundQueue: QUEUE }).shards[0]!;
      const moves = await Promise.all([shard().promote(Date.now(), 10), other2.promote(Date.now(), 10), shard().promote(Date.now(), 10)]);
      expect(moves.map((m) => m.moved).sort()).toEqual([0, 0, 1]);
    } finally {
      other.disconnect();
    }
    expect(await readOutboundStreams(t)).toEqual([reply(1)]);
    const { delivered } = startConsumer();
    await settled(1, 'delivered');
    expect(delivered).toEqual([reply(1).id]);
  });

  it('a malformed entry is failed for good with its reason, and the consumer keeps going', async () => {
    await t.redis.xadd(shard().keys.stream, '*', 'id', 'bad-json', 'data', '{not json');
    await t.redis.xadd(shard().keys.stream, '*', 'id', 'no-text', 'data', JSON.stringify({ id: 'no-text', sessionId: 'web:x', channel: 'web', chatId: 'x', kind: 'reply' }));
    await t.redis.xadd(shard().keys.stream, '*', 'junk', 'field');
    await enqueueOutbound(queue, reply(1));
    const { delivered } = startConsumer();
    await settled(4);
    expect(delivered).toEqual([reply(1).id]);
    const failed = await queue.failed();
    expect(failed.map((f) => f.reason).sort()).toEqual([
      'malformed outbound entry: it has no reply (field `data`)', 'malformed outbound entry: its reply is not JSON', 'malformed outbound entry: its reply lacks `text` (strings)',
    ]);
    expect((await queue.counts()).failed).toBe(3);
  });

  it('close() gives up on a delivery that never ends after closeTimeoutMs: the reply stays claimed, and a live gateway delivers it', async () => {
    const sink = createLogSink();
    let started!: () => void;
    const hung = new Promise<void>((resolve) => { started = resolve; });
    const stuck: Delivery = { deliver: () => (started(), new Promise<never>(() => undefined)) };
    const consumer = createOutboundConsumer({ redis: t.redis, delivery: stuck, logger: sink.logger }, {
      queuePrefix: t.queuePrefix, outboundQueue: QUEUE, lockDurationMs: 200, stalledIntervalMs: 50, closeTimeoutMs: 100,
    });
    await enqueueOutbound(queue, reply(1));
    await hung;
    await expect(consumer.close()).resolves.toBeUndefined();
    expect(sink.lines.filter((line) => line.msg.startsWith('outbound consumer closed with deliveries still running'))).toMatchObject([{ replies: 1, timeoutMs: 100 }]);
    expect((await queue.counts()).active).toBe(1);
    const { delivered } = startConsumer(undefined, { lockDurationMs: 200, stalledIntervalMs: 50 });
    await settled(1, 'delivered');
    expect(delivered).toEqual([reply(1).id]);
  });

  it('close() during a blocked read resolves (the read is ended, not waited out)', async () => {
    const { consumer } = startConsumer(undefined, { blockMs: 3_600_000 });
    await untilConsumerBlocked();
    await expect(consumer.close()).resolves.toBeUndefined();
    closers.splice(0);
  });

  /** Resolves once a client of this Redis is blocked in XREADGROUP on the test's stream. */
  const untilConsumerBlocked = () => pollUntil(async () => {
    const clients = String(await t.redis.call('CLIENT', 'LIST'));
    return clients.split('\n').some((line) => /cmd=xreadgroup/.test(line) && /flags=b/.test(line));
  }, { intervalMs: 0, what: 'a consumer blocked in XREADGROUP' });
});
