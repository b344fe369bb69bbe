/**
 * The web chat's reply append and its delivery record are one atomic step: a gateway that dies
 * after the append (before the delivery ledger records the chunk) does not append it again when
 * the reply is retried.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import type { OutboundMessage } from '../../src/core/inbound.js';
import { createDelivery } from '../../src/gateway/delivery.js';
import { createRedisDeliveryLedger, type DeliveryLedger } from '../../src/gateway/delivery-ledger.js';
import { webConversationKey } from '../../src/redis/keys.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

describe('web chat delivery', () => {
  let t: TestRedis;
  let web: WebChannel;
  afterEach(async () => {
    await web.stop();
    await t.cleanup();
  });

  it('appends a reply once when its delivery is retried after the append', async () => {
    t = createTestRedis();
    web = createWebChannel({ redis: t.redis, keyPrefix: t.keyPrefix });
    await web.start(async () => undefined);
    const ledger = createRedisDeliveryLedger({ redis: t.redis }, { keyPrefix: t.keyPrefix });
    // The first attempt "dies" right after the channel's send: its ledger write never happens.
    let crashes = 1;
    const crashing: DeliveryLedger = {
      sentChunks: (ref) => ledger.sentChunks(ref),
      async markSent(ref, index, messageId) {
        if (crashes-- > 0) throw new Error('gateway killed');
        await ledger.markSent(ref, index, messageId);
      },
    };
    const delivery = createDelivery({ channels: new Map([['web', web]]), ledger: crashing });
    const message: OutboundMessage = { id: 'r-1', sessionId: 'web:conv-1', channel: 'web', chatId: 'conv-1', text: 'the one answer', kind: 'reply' };

    await expect(delivery.deliver(message)).rejects.toThrow('gateway killed');
    const retried = await delivery.deliver(message);

    const entries = await t.redis.xrange(webConversationKey('conv-1', t.keyPrefix), '-', '+');
    expect(entries).toHaveLength(1);
    expect(retried).toMatchObject({ chunks: 1, sent: 1, skipped: 0 });
    expect(retried.messageIds[0]).toBe(`web:conv-1:${entries[0]?.[0]}`);
  });
});
