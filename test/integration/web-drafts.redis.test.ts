import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import { deleteMatching } from '../helpers/redis.js';

/** Two gateways' web channels on one Redis: each shows the drafts it was given; the final, sent by one, closes both. */
const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 2 });
const prefix = `cgtest:${randomUUID()}:`;
const channels: WebChannel[] = [];

async function gateway(): Promise<WebChannel> {
  const channel = createWebChannel({ redis, keyPrefix: prefix }, { keepAliveMs: 60_000 });
  await channel.start(async () => undefined);
  channels.push(channel);
  return channel;
}

interface Poll {
  messages: Array<{ text: string; liveReplyId?: string }>;
  next: string;
  partial?: { liveReplyId: string; text: string };
}

const poll = async (channel: WebChannel, conversation: string, after = '', timeoutMs = 0): Promise<Poll> =>
  (await (await channel.app.request(`/api/chat/${conversation}/messages?after=${encodeURIComponent(after)}&timeoutMs=${timeoutMs}`)).json()) as Poll;

afterEach(async () => {
  await Promise.all(channels.splice(0).map((channel) => channel.stop()));
});

afterAll(async () => {
  await deleteMatching(redis, `${prefix}*`);
  await redis.quit();
});

describe('web chat drafts across gateways', () => {
  it('the final reply keeps its stream id in Redis and closes the draft on the gateway that did not send it', async () => {
    const [a, b] = [await gateway(), await gateway()];
    const target = { chatId: 'conv1', chatType: 'private' as const };
    for (const channel of [a, b]) {
      expect(await channel.sendDraft!(target, { liveReplyId: 's1', seq: 0, text: 'Hel', appended: 'Hel' })).toBe(true);
      await channel.sendDraft!(target, { liveReplyId: 's1', seq: 1, text: 'Hello', appended: 'lo' });
    }
    expect((await poll(b, 'conv1')).partial).toEqual({ liveReplyId: 's1', text: 'Hello' });
    await a.send(target, { text: 'Hello there.', mode: 'formatted', deliveryId: 's1#0', liveReplyId: 's1' });
    const seen = await poll(b, 'conv1');
    expect(seen.messages).toEqual([expect.objectContaining({ text: 'Hello there.', liveReplyId: 's1' })]);
    expect(seen.partial).toBeUndefined();
    expect((await poll(a, 'conv1')).partial).toBeUndefined();
  });

  it('a dropped draft is gone from the long poll; a conversation id that is not one gets no draft', async () => {
    const channel = await gateway();
    await channel.sendDraft!({ chatId: 'conv2' }, { liveReplyId: 's2', seq: 0, text: 'Let me check', appended: 'Let me check' });
    await channel.clearDraft!({ chatId: 'conv2' }, 's2');
    expect((await poll(channel, 'conv2')).partial).toBeUndefined();
    expect(await channel.sendDraft!({ chatId: '../etc' }, { liveReplyId: 's3', seq: 0, text: 'x', appended: 'x' })).toBe(false);
  });
});
