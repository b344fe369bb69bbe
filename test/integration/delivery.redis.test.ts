import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNEL_ERROR_CODES, type Channel, type ChatTarget, type OutgoingText, type SentMessage } from '../../channels/channel.js';
import type { OutboundMessage } from '../../src/core/inbound.js';
import { ChannelError } from '../../src/errors.js';
import { createDelivery, type DeliveryDeps } from '../../src/outbound/delivery.js';
import { createRedisDeliveryLedger, deliveryKey } from '../../src/outbound/delivery-ledger.js';

type Failure = 'rate-limited' | 'format' | 'permanent' | 'transient' | 'crash';

/** A channel test double: records every send, fails the calls it is told to fail. */
class ScriptedChannel implements Channel {
  readonly name = 'telegram' as const;
  readonly lengthUnit = 'utf16' as const;
  readonly formatting = 'telegram-html' as const;
  readonly typingIntervalMs = 4_000;
  readonly calls: Array<{ target: ChatTarget; message: OutgoingText; ok: boolean }> = [];
  /** Failure of call number n (1-based), by n. */
  readonly failures = new Map<number, Failure>();
  private nextId = 100;

  constructor(readonly maxMessageLength: number) {}

  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async sendTyping(): Promise<void> {}

  async send(target: ChatTarget, message: OutgoingText): Promise<SentMessage> {
    const failure = this.failures.get(this.calls.length + 1);
    this.calls.push({ target, message, ok: failure === undefined });
    switch (failure) {
      case undefined:
        return { messageId: String(this.nextId++) };
      case 'rate-limited':
        throw new ChannelError('sendMessage failed for telegram:1 (429)', { retryable: true, retryAfterMs: 3_000, code: CHANNEL_ERROR_CODES.rateLimited });
      case 'format':
        throw new ChannelError("sendMessage failed for telegram:1 (400: can't parse entities)", { retryable: false, code: CHANNEL_ERROR_CODES.formatRejected });
      case 'permanent':
        throw new ChannelError('sendMessage failed for telegram:1 (400: chat not found)', { retryable: false, code: CHANNEL_ERROR_CODES.permanent });
      case 'transient':
        throw new ChannelError('sendMessage failed for telegram:1 (502)', { retryable: true, code: CHANNEL_ERROR_CODES.transient });
      case 'crash':
        throw new Error('socket hang up');
    }
  }

  get delivered(): OutgoingText[] {
    return this.calls.filter((call) => call.ok).map((call) => call.message);
  }
}

const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
const prefix = `cgtest:${randomUUID()}:`;
const ledger = createRedisDeliveryLedger({ redis }, { keyPrefix: prefix, ttlMs: 60_000 });

function setup(channel: ScriptedChannel, overrides: Partial<DeliveryDeps> = {}) {
  return { delivery: createDelivery({ channels: new Map([['telegram', channel]]), ledger, ...overrides }) };
}

function reply(text: string, overrides: Partial<OutboundMessage> = {}): OutboundMessage {
  return { id: `r-${randomUUID()}`, sessionId: 'telegram:42', channel: 'telegram', chatId: '42', text, kind: 'reply', ...overrides };
}

const longText = Array.from({ length: 30 }, (_, i) => `Line ${i}: ${'word '.repeat(8)}`).join('\n');

beforeAll(async () => {
  await redis.ping();
});

afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

describe('delivery', () => {
  it('formats, splits and sends every chunk in order, replying with the first only', async () => {
    const channel = new ScriptedChannel(200);
    const { delivery } = setup(channel);
    const message = reply(`**Hello** <you>\n${longText}`, { replyTo: '7', threadId: '3' });
    const result = await delivery.deliver(message);
    expect(result.chunks).toBeGreaterThan(1);
    expect(result.sent).toBe(result.chunks);
    expect(channel.delivered[0].text.startsWith('<b>Hello</b> &lt;you&gt;')).toBe(true);
    expect(channel.calls.map((call) => call.target.replyTo)).toEqual(['7', ...Array(result.chunks - 1).fill(undefined)]);
    expect(channel.calls.every((call) => call.target.threadId === '3' && call.message.text.length <= 200)).toBe(true);
    const sent = await redis.hgetall(deliveryKey({ sessionId: message.sessionId, replyId: message.id }, prefix));
    expect(Object.keys(sent)).toHaveLength(result.chunks);
    expect(await redis.pttl(deliveryKey({ sessionId: message.sessionId, replyId: message.id }, prefix))).toBeGreaterThan(0);
  });

  it('never sends a chunk twice when a failed delivery is retried', async () => {
    const channel = new ScriptedChannel(200);
    channel.failures.set(3, 'permanent');
    const { delivery } = setup(channel);
    const message = reply(longText);
    await expect(delivery.deliver(message)).rejects.toMatchObject({ code: CHANNEL_ERROR_CODES.permanent, retryable: false });
    expect(channel.delivered).toHaveLength(2);

    const retried = await delivery.deliver(message);
    expect(retried.skipped).toBe(2);
    expect(retried.sent).toBe(retried.chunks - 2);
    const texts = channel.delivered.map((sent) => sent.text);
    expect(new Set(texts).size).toBe(texts.length);
    expect(texts).toHaveLength(retried.chunks);

    const again = await delivery.deliver(message);
    expect(again).toMatchObject({ sent: 0, skipped: retried.chunks });
    expect(channel.delivered).toHaveLength(retried.chunks);
  });

  it('neither waits nor retries a rate limit: it surfaces with retry-after, and the next call sends only what is missing', async () => {
    const channel = new ScriptedChannel(200);
    channel.failures.set(2, 'rate-limited');
    const { delivery } = setup(channel);
    const message = reply(longText);
    await expect(delivery.deliver(message)).rejects.toMatchObject({ code: CHANNEL_ERROR_CODES.rateLimited, retryable: true, retryAfterMs: 3_000 });
    expect(channel.calls).toHaveLength(2);
    const retried = await delivery.deliver(message);
    expect(retried.skipped).toBe(1);
    expect(channel.calls[2].message).toEqual(channel.calls[1].message);
  });

  it('fails at the first transient error, retryable, and an unexpected error counts as transient', async () => {
    const channel = new ScriptedChannel(4096);
    channel.failures.set(1, 'transient').set(2, 'crash');
    const { delivery } = setup(channel);
    await expect(delivery.deliver(reply('hi'))).rejects.toMatchObject({ code: CHANNEL_ERROR_CODES.transient, retryable: true });
    expect(channel.calls).toHaveLength(1);
    await expect(delivery.deliver(reply('hi'))).rejects.toMatchObject({ code: CHANNEL_ERROR_CODES.transient, retryable: true, message: 'send failed on telegram (unexpected error)' });
    expect(channel.calls).toHaveLength(2);
  });

  it('resends a chunk as plain text when the platform rejects its formatting', async () => {
    const channel = new ScriptedChannel(4096);
    channel.failures.set(1, 'format');
    const { delivery } = setup(channel);
    const result = await delivery.deliver(reply('**bold** & <b>'));
    expect(result.plainFallbacks).toBe(1);
    // Both tries of the chunk carry the same delivery id (the web chat appends once per id).
    const deliveryId = channel.calls[0].message.deliveryId;
    expect(deliveryId).toMatch(/#0$/);
    expect(channel.calls.map((call) => call.message)).toEqual([
      { text: '<b>bold</b> &amp; &lt;b&gt;', mode: 'formatted', deliveryId, answersTurn: true },
      { text: '**bold** & <b>', mode: 'plain', deliveryId, answersTurn: true },
    ]);
  });

  it('marks the chunks that answer a turn: a reply, or a notice in its place; not other notices', async () => {
    const channel = new ScriptedChannel(4096);
    const { delivery } = setup(channel);
    await delivery.deliver(reply('compacted', { kind: 'notice' }));
    await delivery.deliver(reply('Stopped.', { kind: 'notice', liveReplyId: 'reply-x-0' }));
    await delivery.deliver(reply('the answer'));
    expect(channel.calls.map((call) => call.message.answersTurn)).toEqual([undefined, true, true]);
  });

  it('fails without retry when the channel is not configured', async () => {
    const { delivery } = setup(new ScriptedChannel(4096));
    await expect(delivery.deliver(reply('x', { channel: 'discord' }))).rejects.toMatchObject({ retryable: false, code: CHANNEL_ERROR_CODES.notStarted });
  });
});
