/**
 * The web chat's reply append is its own delivery record: a retried delivery (a gateway that died
 * after the append, a job run twice) does not append a chunk again, and the gateway's delivery keeps
 * no ledger of its own for the web chat's chunks (no Redis reads or writes beyond the append).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import type { OutboundMessage } from '../../src/core/inbound.js';
import { createDelivery } from '../../src/outbound/delivery.js';
import { createMemoryDeliveryLedger, createRedisDeliveryLedger, deliveryKey, type DeliveryLedger } from '../../src/outbound/delivery-ledger.js';
import { webConversationKey } from '../../src/redis/keys.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

describe('web chat delivery', () => {
  let t: TestRedis;
  let web: WebChannel;
  afterEach(async () => {
    await web.stop();
    await t.cleanup();
  });

  it('appends each chunk of a reply once when its delivery is retried, without a ledger of its own', async () => {
    t = createTestRedis();
    web = createWebChannel({ redis: t.redis, keyPrefix: t.keyPrefix }, { maxMessageLength: 32 });
    await web.start(async () => undefined);
    const ledger = createRedisDeliveryLedger({ redis: t.redis }, { keyPrefix: t.keyPrefix });
    const calls: string[] = [];
    const watched: DeliveryLedger = {
      sentChunks: (ref) => (calls.push('sentChunks'), ledger.sentChunks(ref)),
      markSent: (ref, index, messageId) => (calls.push('markSent'), ledger.markSent(ref, index, messageId)),
    };
    const delivery = createDelivery({ channels: new Map([['web', web]]), ledger: watched });
    const message: OutboundMessage = { id: 'r-1', sessionId: 'web:conv-1', channel: 'web', chatId: 'conv-1', text: 'the one answer, which is long enough for two chunks', kind: 'reply' };

    const first = await delivery.deliver(message);
    const retried = await delivery.deliver(message);

    const entries = await t.redis.xrange(webConversationKey('conv-1', t.keyPrefix), '-', '+');
    expect(first.chunks).toBe(2);
    expect(entries).toHaveLength(2);
    expect(retried.messageIds).toEqual(first.messageIds);
    expect(retried.messageIds).toEqual(entries.map(([id]) => `web:conv-1:${id}`));
    expect(calls).toEqual([]);
    expect(await t.redis.exists(deliveryKey({ sessionId: message.sessionId, replyId: message.id }, t.keyPrefix))).toBe(0);
  });

  it('keeps the ledger for the in-memory reply store, which appends every send', async () => {
    t = createTestRedis();
    web = createWebChannel();
    await web.start(async () => undefined);
    const delivery = createDelivery({ channels: new Map([['web', web]]), ledger: createMemoryDeliveryLedger() });
    const message: OutboundMessage = { id: 'r-2', sessionId: 'web:conv-2', channel: 'web', chatId: 'conv-2', text: 'once', kind: 'reply' };

    await delivery.deliver(message);
    const retried = await delivery.deliver(message);

    expect(retried).toMatchObject({ chunks: 1, sent: 0, skipped: 1 });
  });
});
