/**
 * The Redis reply store's wake-ups carry the appended entry: a read that found nothing after its
 * cursor answers the entry it is woken with, without reading the stream again, and a read at the
 * last entry the subscriber heard of does not read before it waits; a wake-up without
 * an entry (a repeated append, a gateway of the previous version) or with one not after the
 * cursor makes it read (or wait) as before.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createRedisReplyStore } from '../../channels/web/redis-replies.js';
import type { ReplyStore } from '../../channels/web/reply-store.js';
import { webRepliesChannel } from '../../src/redis/keys.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { pollUntil } from '../helpers/waits.js';

describe('web reply wake-ups', () => {
  let t: TestRedis;
  let stores: ReplyStore[] = [];
  afterEach(async () => {
    for (const store of stores) store.closeAll();
    stores = [];
    await t.cleanup();
  });

  /** A store whose reader counts its XREADs, and one that only appends (another gateway). */
  const setUp = () => {
    t = createTestRedis();
    const reader = t.redis.duplicate();
    const xread = reader.xread.bind(reader) as (...args: unknown[]) => Promise<unknown>;
    const counted = { reads: 0 };
    (reader as unknown as { xread: (...args: unknown[]) => Promise<unknown> }).xread = (...args) => {
      counted.reads++;
      return xread(...args);
    };
    const options = { keyPrefix: t.keyPrefix };
    const waiting = createRedisReplyStore({ redis: reader }, options);
    const appender = createRedisReplyStore({ redis: t.redis }, options);
    stores.push(waiting, appender);
    return { waiting, appender, counted, close: () => reader.disconnect() };
  };

  it('answers a waiting read with the appended entry, reading the stream once', async () => {
    const { waiting, appender, counted, close } = setUp();
    const first = await appender.append('conv-1', 'before', 'text');
    const page = waiting.read('conv-1', first.cursor, { timeoutMs: 10_000 });
    await pollUntil(() => waiting.waiting() === 1);
    const reply = await appender.append('conv-1', 'the **answer**', 'markdown', { deliveryId: 'r-1#0', liveReplyId: 'stream-1' });

    const answered = await page;
    expect(answered.replies).toEqual([reply]);
    expect(answered.next).toBe(reply.cursor);
    expect(counted.reads).toBe(1);
    // Polling again at the entry the subscriber heard of last: nothing can be after it, so no read.
    const again = waiting.read('conv-1', answered.next, { timeoutMs: 10_000 });
    await pollUntil(() => waiting.waiting() === 1);
    const next = await appender.append('conv-1', 'and more', 'text');
    expect((await again).replies).toEqual([next]);
    expect(counted.reads).toBe(1);
    // A wait that timed out forgets what it heard: the next read reads the stream.
    expect((await waiting.read('conv-1', next.cursor, { timeoutMs: 50 })).replies).toEqual([]);
    expect((await waiting.read('conv-1', next.cursor, { timeoutMs: 50 })).replies).toEqual([]);
    expect(counted.reads).toBe(2);
    close();
  });

  it('reads the stream when woken without an entry, and keeps waiting past an entry not after its cursor', async () => {
    const { waiting, appender, counted, close } = setUp();
    const reply = await appender.append('conv-2', 'one', 'text');
    // A plain wake-up (what a repeated append publishes): the read reads again and finds nothing new.
    const stale = waiting.read('conv-2', reply.cursor, { timeoutMs: 300 });
    await pollUntil(() => waiting.waiting() === 1);
    await t.redis.publish(webRepliesChannel(t.keyPrefix), 'conv-2');
    expect((await stale).replies).toEqual([]);
    expect(counted.reads).toBe(2);
    // A cursor past every entry: a woken entry before it is not answered.
    const ahead = waiting.read('conv-2', '99999999999999-0', { timeoutMs: 300 });
    await pollUntil(() => waiting.waiting() === 1);
    await appender.append('conv-2', 'two', 'text');
    expect((await ahead).replies).toEqual([]);
    close();
  });
});
