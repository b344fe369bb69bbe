/**
 * The outbound transport under stress: a Redis restart without persistence (stream and group
 * gone), two gateways racing on one chat's replies, the BullMQ upgrade run by two gateways at
 * once, and payloads with lone surrogates and a megabyte of text through a delay and a promotion.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHANNEL_ERROR_CODES } from '../../channels/channel.js';
import type { OutboundMessage } from '../../src/core/inbound.js';
import { ChannelError } from '../../src/errors.js';
import type { Delivery } from '../../src/outbound/delivery.js';
import { createOutboundConsumer, type OutboundConsumerOptions, type OutboundOutcome } from '../../src/outbound/consumer.js';
import { createSilentLogger } from '../../src/log.js';
import { openOutboundQueue } from '../../src/outbound/outbound-queue.js';
import { OUTBOUND_GROUP } from '../../src/outbound/outbound-shard.js';
import { closedPort } from '../helpers/cli-process.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { recordingDelivery } from '../helpers/outbound-delivery.js';
import { waitUntil } from '../helpers/waits.js';

const QUEUE = 'outbound';
const reply = (n: number, chat = 'chat', text = `reply ${n} to ${chat}`): OutboundMessage => ({ id: `reply-${chat}-${n}`, sessionId: `web:${chat}`, channel: 'web', chatId: chat, text, kind: 'reply' });

describe('outbound transport under stress', () => {
  let t: TestRedis;
  const events = new EventEmitter();
  const closers: Array<() => Promise<unknown>> = [];

  beforeEach(() => {
    t = createTestRedis();
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    events.removeAllListeners();
    await t.cleanup();
  });

  const consume = (redis: Redis, delivery: Delivery, options: Partial<OutboundConsumerOptions> = {}, onOutcome?: (o: OutboundOutcome) => void) => {
    const consumer = createOutboundConsumer({ redis, delivery, logger: createSilentLogger(), onOutcome }, {
      queuePrefix: t.queuePrefix, outboundQueue: QUEUE, retry: { baseDelayMs: 1, maxDelayMs: 5 }, blockMs: 100, ...options,
    });
    closers.push(() => consumer.close());
    return consumer;
  };

  /** A private redis-server without persistence (never the shared one), killed after the test. */
  async function privateRedis() {
    const port = await closedPort();
    const start = async (): Promise<ChildProcess> => {
      const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'ignore'] });
      for await (const chunk of child.stdout!) if (/ready to accept connections/i.test(String(chunk))) break;
      child.stdout!.resume();
      return child;
    };
    let server = await start();
    closers.push(async () => {
      if (server.exitCode === null) server.kill('SIGKILL');
    });
    const redis = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: null, retryStrategy: () => 50 });
    redis.on('error', () => undefined);
    closers.push(async () => redis.disconnect());
    return {
      redis,
      signal: (name: NodeJS.Signals) => server.kill(name),
      async restart() {
        server.kill('SIGKILL');
        await once(server, 'exit');
        server = await start();
      },
    };
  }

  it('a reply whose delivery ends while Redis hangs is settled once Redis is back, delivered once', async () => {
    const { redis, signal } = await privateRedis();
    const queue = openOutboundQueue(redis, { queuePrefix: t.queuePrefix, queueShards: 1, outboundQueue: QUEUE });
    let release: () => void = () => undefined;
    const sending = new Promise<void>((resolve) => { release = resolve; });
    const calls: string[] = [];
    const outcomes: OutboundOutcome[] = [];
    const delivery: Delivery = {
      deliver: async (message) => {
        calls.push(message.id);
        events.emit('call');
        await sending;
        return { replyId: message.id, chunks: 1, sent: 1, skipped: 0, plainFallbacks: 0, messageIds: ['1'] };
      },
    };
    consume(redis, delivery, { stalledIntervalMs: 50, lockDurationMs: 200 }, (outcome) => {
      outcomes.push(outcome);
      events.emit('outcome');
    });
    await queue.add(reply(1));
    await waitUntil(events, 'call', () => calls.length === 1);
    signal('SIGSTOP');
    try {
      release();
      // The outage outlasts the claim's lock: the consumer's own stall check must not take it back twice.
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      signal('SIGCONT');
    }
    await waitUntil(events, 'outcome', () => outcomes.length === 1);
    expect(outcomes.map((o) => o.type)).toEqual(['delivered']);
    expect(calls).toEqual([reply(1).id]);
    expect(await queue.counts()).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 0 });
  });

  it('after a Redis restart without persistence (stream and group gone) new replies are delivered', async () => {
    const { redis, restart } = await privateRedis();
    const queue = openOutboundQueue(redis, { queuePrefix: t.queuePrefix, queueShards: 1, outboundQueue: QUEUE });
    const { delivery, messages: delivered } = recordingDelivery({ events });
    const outcomes: OutboundOutcome[] = [];
    consume(redis, delivery, { stalledIntervalMs: 100, lockDurationMs: 500 }, (outcome) => {
      outcomes.push(outcome);
      events.emit('outcome');
    });
    await queue.add(reply(1));
    await waitUntil(events, 'outcome', () => outcomes.length === 1);

    await restart();
    await queue.add(reply(2));
    await waitUntil(events, 'outcome', () => outcomes.length === 2);
    expect(outcomes.map((o) => o.type)).toEqual(['delivered', 'delivered']);
    expect(delivered.map((m) => m.id)).toEqual([reply(1).id, reply(2).id]);
    expect(await queue.counts()).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 0 });
  });

  it('two gateways reading one shard deliver each chat\'s replies in the order they were enqueued', async () => {
    const queue = openOutboundQueue(t.redis, { queuePrefix: t.queuePrefix, queueShards: 1, outboundQueue: QUEUE });
    const { delivery, messages: delivered } = recordingDelivery({ events, sendMs: () => Math.floor(Math.random() * 4) });
    const second = t.redis.duplicate();
    closers.push(async () => second.disconnect());
    // Each reads one entry at a time, so one chat's consecutive replies go to both gateways.
    consume(t.redis, delivery, { concurrency: 1, orderRetryMs: 5 });
    consume(second, delivery, { concurrency: 1, orderRetryMs: 5 });
    const CHATS = 20;
    for (let c = 0; c < CHATS; c++) for (let n = 1; n <= 3; n++) await queue.add(reply(n, `c${c}`));
    await waitUntil(events, 'delivered', () => delivered.length === CHATS * 3);
    for (let c = 0; c < CHATS; c++) {
      expect(delivered.filter((m) => m.chatId === `c${c}`).map((m) => m.id)).toEqual([1, 2, 3].map((n) => reply(n, `c${c}`).id));
    }
  });

  it('a gateway that took a chat\'s first reply and died before delivering it holds the later ones back', async () => {
    const queue = openOutboundQueue(t.redis, { queuePrefix: t.queuePrefix, queueShards: 1, outboundQueue: QUEUE });
    const shard = queue.shards[0]!;
    await queue.add(reply(1));
    await queue.add(reply(2));
    await shard.ensureGroup();
    // The dead gateway's read: reply 1 is pending for it, it never checked its order.
    await t.redis.xreadgroup('GROUP', OUTBOUND_GROUP, 'dead-gateway', 'COUNT', 1, 'STREAMS', shard.keys.stream, '>');
    const { delivery, messages: delivered } = recordingDelivery({ events });
    consume(t.redis, delivery, { orderRetryMs: 20, lockDurationMs: 200, stalledIntervalMs: 50 });
    await waitUntil(events, 'delivered', () => delivered.length === 2);
    expect(delivered.map((m) => m.id)).toEqual([reply(1).id, reply(2).id]);
  });

  it('a reply that cannot be delivered (malformed) does not hold its chat\'s later replies back', async () => {
    const queue = openOutboundQueue(t.redis, { queuePrefix: t.queuePrefix, queueShards: 1, outboundQueue: QUEUE });
    const outcomes: OutboundOutcome[] = [];
    const { delivery, messages: delivered } = recordingDelivery({ events });
    await queue.add({ ...reply(1), chatId: 42 } as unknown as OutboundMessage);
    await queue.add(reply(2));
    consume(t.redis, delivery, { orderRetryMs: 60_000 }, (outcome) => {
      outcomes.push(outcome);
      events.emit('outcome');
    });
    await waitUntil(events, 'outcome', () => outcomes.length === 2);
    expect(outcomes.map((o) => [o.id, o.type])).toEqual([[reply(1).id, 'failed'], [reply(2).id, 'delivered']]);
    expect(delivered.map((m) => m.id)).toEqual([reply(2).id]);
  });

  it('a reply retried after a transient failure keeps its place before the later replies of its chat', async () => {
    const queue = openOutboundQueue(t.redis, { queuePrefix: t.queuePrefix, queueShards: 1, outboundQueue: QUEUE });
    const transient = new ChannelError('flaky', { retryable: true, code: CHANNEL_ERROR_CODES.transient });
    const { delivery, messages: delivered } = recordingDelivery({ events, fail: (m, calls) => (m.id === reply(1).id && calls < 3 ? transient : undefined) });
    consume(t.redis, delivery, { orderRetryMs: 5, stalledIntervalMs: 50 });
    for (let n = 1; n <= 4; n++) await queue.add(reply(n));
    await waitUntil(events, 'delivered', () => delivered.length === 4);
    expect(delivered.map((m) => m.id)).toEqual([1, 2, 3, 4].map((n) => reply(n).id));
  });

  it('lone surrogates and a megabyte of text survive a rate limit (delay and promotion) unchanged', async () => {
    const queue = openOutboundQueue(t.redis, { queuePrefix: t.queuePrefix, queueShards: 1, outboundQueue: QUEUE });
    const weird = reply(1, 'w', `\ud800 half \udfff pair 😀 nul \u0000 "q" \\ ${'é'.repeat(1 << 19)}`);
    const limited = new ChannelError('slow down', { retryable: true, code: CHANNEL_ERROR_CODES.rateLimited, retryAfterMs: 5 });
    const { delivery, messages: delivered } = recordingDelivery({ events, fail: (_m, calls) => (calls === 1 ? limited : undefined) });
    consume(t.redis, delivery, { stalledIntervalMs: 50 });
    await queue.add(weird);
    await waitUntil(events, 'delivered', () => delivered.length === 1);
    expect(delivered[0]).toEqual(weird);
  });
});
