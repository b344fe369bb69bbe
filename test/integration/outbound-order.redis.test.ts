import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Channel, ChatTarget, OutgoingText, SentMessage } from '../../channels/channel.js';
import { CHANNEL_ERROR_CODES } from '../../channels/channel.js';
import type { ChannelName, OutboundMessage } from '../../src/core/inbound.js';
import { ChannelError } from '../../src/errors.js';
import { createDelivery } from '../../src/outbound/delivery.js';
import { createMemoryDeliveryLedger } from '../../src/outbound/delivery-ledger.js';
import { createOutboundConsumer } from '../../src/outbound/consumer.js';
import { createSilentLogger } from '../../src/log.js';
import { enqueueOutbound, openOutboundQueue, type OutboundQueue } from '../../src/outbound/outbound-queue.js';
import { shardPrefixes } from '../../src/queue/names.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const QUEUE = 'outbound';

/**
 * A web-like channel whose sends of a text in `failing` fail transiently `failing[text]` times,
 * and then as long as `holdFailing(sent)` says so.
 */
function fakeChannel(failing: Record<string, number>, holdFailing: (sent: readonly string[]) => boolean = () => false) {
  const sent: string[] = [];
  const failures: string[] = [];
  const waiters: Array<() => void> = [];
  const channel: Channel = {
    name: 'web', maxMessageLength: 4000, lengthUnit: 'utf16', formatting: 'plain', typingIntervalMs: 5000,
    start: () => Promise.resolve(), stop: () => Promise.resolve(), sendTyping: () => Promise.resolve(),
    send(_target: ChatTarget, message: OutgoingText): Promise<SentMessage> {
      if ((failing[message.text] ?? 0) > 0 || (message.text in failing && holdFailing(sent))) {
        failing[message.text]--;
        failures.push(message.text);
        return Promise.reject(new ChannelError(`send failed for web:chat (503)`, { retryable: true, code: CHANNEL_ERROR_CODES.transient }));
      }
      sent.push(message.text);
      waiters.splice(0).forEach((wake) => wake());
      return Promise.resolve({ messageId: String(sent.length) });
    },
  };
  const waitForSent = async (count: number): Promise<string[]> => {
    while (sent.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    return sent;
  };
  return { channel, sent, failures, waitForSent };
}

const reply = (n: number, sessionId = 'web:chat'): OutboundMessage => ({
  id: `reply-${sessionId.replace(':', '-')}-${n}`, sessionId, channel: 'web', chatId: sessionId.slice(4), text: `reply ${n} of ${sessionId}`, kind: 'reply',
});

describe('outbound consumer: per-chat order across retries', () => {
  let t: TestRedis;
  let queue: OutboundQueue;
  const closers: Array<() => Promise<unknown>> = [];

  beforeEach(() => {
    t = createTestRedis();
    queue = openOutboundQueue(t.redis, { ...t.names, outboundQueue: QUEUE });
  });

  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await t.cleanup();
  });

  /** Adds the replies in order, as the workers do. */
  async function enqueue(messages: OutboundMessage[]): Promise<void> {
    for (const message of messages) await enqueueOutbound(queue, message);
  }

  /** One consumer per outbound shard (CHATGATE_TEST_SHARDS), as the gateway runs them. */
  function startConsumer(channel: Channel): void {
    const delivery = createDelivery({ channels: new Map<ChannelName, Channel>([['web', channel]]), ledger: createMemoryDeliveryLedger() });
    for (const queuePrefix of shardPrefixes(t.names)) {
      const consumer = createOutboundConsumer({ redis: t.redis, delivery, logger: createSilentLogger() }, { queuePrefix, outboundQueue: QUEUE, orderRetryMs: 20, retry: { baseDelayMs: 50 } });
      closers.push(() => consumer.close());
    }
  }

  it('a reply that fails after the delivery retries still reaches the chat before the next ones', async () => {
    // Its first two attempts fail: twice the reply waits in the delayed set while replies 2 and 3 are held back.
    const fake = fakeChannel({ 'reply 1 of web:chat': 2 });
    await enqueue([reply(1), reply(2), reply(3)]);
    startConsumer(fake.channel);
    expect(await fake.waitForSent(3)).toEqual(['reply 1 of web:chat', 'reply 2 of web:chat', 'reply 3 of web:chat']);
    expect(fake.failures).toEqual(['reply 1 of web:chat', 'reply 1 of web:chat']);
  });

  it('other chats are not held back, and a reply that fails for good does not block its chat', async () => {
    // web:chat's first reply keeps failing until web:other's reply went: other chats must not wait.
    const fake = fakeChannel({ 'reply 1 of web:chat': 2 }, (sent) => !sent.includes('reply 1 of web:other'));
    const permanent = fakeChannel({});
    permanent.channel.send = (target, message) => message.text === 'reply 1 of web:gone'
      ? Promise.reject(new ChannelError('send failed for web:gone (403: blocked)', { retryable: false, code: CHANNEL_ERROR_CODES.permanent }))
      : fake.channel.send(target, message);
    await enqueue([reply(1), reply(1, 'web:other'), reply(1, 'web:gone'), reply(2), reply(2, 'web:gone')]);
    startConsumer(permanent.channel);
    const sent = await fake.waitForSent(4);
    expect(sent.filter((text) => text.endsWith('web:chat'))).toEqual(['reply 1 of web:chat', 'reply 2 of web:chat']);
    expect(sent.indexOf('reply 1 of web:other')).toBeLessThan(sent.indexOf('reply 1 of web:chat'));
    expect(sent).toContain('reply 2 of web:gone');
  });
});
