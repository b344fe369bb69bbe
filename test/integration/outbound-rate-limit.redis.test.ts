import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTelegramChannel } from '../../channels/telegram/index.js';
import type { OutboundMessage } from '../../src/core/inbound.js';
import { createDelivery } from '../../src/outbound/delivery.js';
import { createRedisDeliveryLedger } from '../../src/outbound/delivery-ledger.js';
import { createOutboundConsumer, type OutboundOutcome } from '../../src/outbound/consumer.js';
import { createSilentLogger } from '../../src/log.js';
import { enqueueOutbound, openOutboundQueue, type OutboundQueue } from '../../src/outbound/outbound-queue.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { waitUntil } from '../helpers/waits.js';

const QUEUE = 'outbound';
/** More flood-limited chats than the consumer has delivery slots (8). */
const FLOODED = ['101', '102', '103', '104', '105', '106', '107', '108', '109'];
const FREE = '200';

const reply = (chatId: string, n = 1): OutboundMessage => ({
  id: `reply-${chatId}-${n}`, sessionId: `telegram:${chatId}`, channel: 'telegram', chatId, text: `reply ${n} to ${chatId}`, kind: 'reply',
});

describe('outbound delivery under Telegram rate limits (one retry layer)', () => {
  let t: TestRedis;
  let telegram: FakeTelegramServer;
  let queue: OutboundQueue;
  const outcomes = new EventEmitter();
  const closers: Array<() => Promise<unknown>> = [];

  beforeEach(async () => {
    t = createTestRedis();
    telegram = await startFakeTelegram();
    queue = openOutboundQueue(t.redis, { queuePrefix: t.queuePrefix, queueShards: 1, outboundQueue: QUEUE });
  });

  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    outcomes.removeAllListeners();
    await telegram.close();
    await t.cleanup();
  });

  /** The real Telegram channel against the fake, the Redis ledger and the outbound consumer. */
  async function startDelivery(onDelivered: (message: OutboundMessage) => void, retry?: { baseDelayMs: number }) {
    const channel = createTelegramChannel({}, { token: telegram.token, apiRoot: telegram.apiRoot, pollTimeoutSeconds: 1 });
    await channel.start(async () => undefined);
    closers.push(() => channel.stop());
    const delivery = createDelivery({ channels: new Map([['telegram', channel]]), ledger: createRedisDeliveryLedger({ redis: t.redis }, { keyPrefix: t.keyPrefix }) });
    const onOutcome = (outcome: OutboundOutcome) => outcomes.emit(outcome.type, outcome);
    const consumer = createOutboundConsumer({ redis: t.redis, delivery, logger: createSilentLogger(), onDelivered, onOutcome }, { queuePrefix: t.queuePrefix, outboundQueue: QUEUE, orderRetryMs: 20, retry });
    closers.push(() => consumer.close());
  }

  /** Resolves once every id in `ids` was reported delayed by the consumer. */
  function delayed(ids: readonly string[]): Promise<void> {
    const seen = new Set<string>();
    return new Promise((resolve) => {
      const onDelayed = ({ id }: OutboundOutcome) => {
        seen.add(id);
        if (ids.every((each) => seen.has(each))) {
          outcomes.off('delayed', onDelayed);
          resolve();
        }
      };
      outcomes.on('delayed', onDelayed);
    });
  }

  /** A delayed reply's attempts so far, or undefined when it is not in the delayed set. */
  async function delayedAttempts(id: string): Promise<number | undefined> {
    const shard = queue.shards[0]!;
    if ((await t.redis.zscore(shard.keys.delayed, id)) === null) return undefined;
    return Number((JSON.parse((await t.redis.hget(shard.keys.delayedData, id))!) as { attempts: string }).attempts);
  }

  const sendsTo = (chatId: string) => telegram.callsOf('sendMessage').filter((call) => String(call.params.chat_id) === chatId);

  it('a chat told to wait 30 s waits in the delayed set: other chats are delivered meanwhile, and its own replies keep their order', async () => {
    for (const chatId of FLOODED) {
      telegram.failNext('sendMessage', { errorCode: 429, description: 'Too Many Requests: retry after 30', retryAfterSeconds: 30 }, { when: (params) => String(params.chat_id) === chatId });
    }
    const delivered: OutboundMessage[] = [];
    const deliveries = new EventEmitter();
    await startDelivery((message) => {
      delivered.push(message);
      deliveries.emit('delivered');
    });
    const freeDelivered = waitUntil(deliveries, 'delivered', () => delivered.some((message) => message.chatId === FREE));
    const floodedDelayed = delayed(FLOODED.map((chatId) => reply(chatId).id));
    for (const chatId of FLOODED) await enqueueOutbound(queue, reply(chatId));
    await enqueueOutbound(queue, reply(FLOODED[0], 2));
    await enqueueOutbound(queue, reply(FREE));

    await Promise.all([freeDelivered, floodedDelayed]);
    // Delivered while every flood-limited reply still waits out its 30 s in the delayed set, sent once.
    expect(delivered.map((message) => message.id)).toEqual([reply(FREE).id]);
    for (const chatId of FLOODED) {
      // No attempt was spent on the rate limit.
      expect(await delayedAttempts(reply(chatId).id)).toBe(0);
      expect(sendsTo(chatId)).toHaveLength(1);
    }
    // The flooded replies and the one held back behind the first (it cycles between the delayed set and the stream).
    const counts = await queue.counts();
    expect(counts.waiting + counts.active + counts.delayed).toBe(FLOODED.length + 1);
    expect(counts.failed).toBe(0);

    // The wait is over (made due now, moved back by the consumer's promotion): the first chat gets reply 1, then the reply held back behind it.
    await t.redis.zadd(queue.shards[0]!.keys.delayed, Date.now(), reply(FLOODED[0]).id);
    await waitUntil(deliveries, 'delivered', () => delivered.filter((message) => message.chatId === FLOODED[0]).length === 2);
    expect(sendsTo(FLOODED[0]).map((call) => call.params.text)).toEqual(['reply 1 to 101', 'reply 1 to 101', 'reply 2 to 101']);
  });

  it('a transient failure spends one attempt and is retried after the policy\'s backoff; a permanent one fails the job at once', async () => {
    telegram.failNext('sendMessage', { errorCode: 502, description: 'Bad Gateway' }, { when: (params) => String(params.chat_id) === '301' });
    telegram.failNext('sendMessage', { errorCode: 403, description: 'Forbidden: bot was blocked by the user' }, { when: (params) => String(params.chat_id) === '302' });
    const delivered: OutboundMessage[] = [];
    const deliveries = new EventEmitter();
    await startDelivery((message) => {
      delivered.push(message);
      deliveries.emit('delivered');
    }, { baseDelayMs: 10 });
    const failed = new Promise<string>((resolve) => outcomes.once('failed', ({ id, reason }: OutboundOutcome & { reason: string }) => resolve(`${id}: ${reason}`)));
    const completed = new Promise<OutboundOutcome>((resolve) => outcomes.once('delivered', resolve));
    await enqueueOutbound(queue, reply('302'));
    await enqueueOutbound(queue, reply('301'));
    await waitUntil(deliveries, 'delivered', () => delivered.length === 1);
    expect(delivered[0].id).toBe(reply('301').id);
    expect(await completed).toEqual({ type: 'delivered', id: reply('301').id, attempts: 2 }); // the failed attempt and the delivery
    expect(sendsTo('301')).toHaveLength(2);
    expect(await failed).toBe(`${reply('302').id}: sendMessage failed for telegram:302 (403: Forbidden: bot was blocked by the user)`);
    expect(sendsTo('302')).toHaveLength(1);
    // Failed for good: counted, listed with its reason, and re-adding it is a no-op.
    expect(await queue.counts()).toMatchObject({ failed: 1, waiting: 0, delayed: 0 });
    expect(await queue.failed()).toEqual([expect.objectContaining({ id: reply('302').id, attempts: 1, reason: expect.stringContaining('403') })]);
    expect(await queue.add(reply('302'))).toBe(false);
  });
});
