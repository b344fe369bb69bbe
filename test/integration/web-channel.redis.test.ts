import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import { webConversationKey } from '../../src/redis/keys.js';
import { readSseEvents } from '../helpers/http.js';

/** Two "gateways" (web channel instances) on one Redis, plus restarts of them. */
const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 2 });
const prefix = `cgtest:${randomUUID()}:`;
const channels: WebChannel[] = [];

async function gateway(): Promise<WebChannel> {
  const channel = createWebChannel({ redis, keyPrefix: prefix }, { keepAliveMs: 60_000 });
  await channel.start(async () => undefined);
  channels.push(channel);
  return channel;
}

afterEach(async () => {
  await Promise.all(channels.splice(0).map((channel) => channel.stop()));
});

afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

interface Poll {
  messages: Array<{ id: string; cursor: string; text: string; format: string; epoch?: string }>;
  next: string;
  epoch?: string;
}

const poll = async (channel: WebChannel, conversation: string, after: string, timeoutMs = 0): Promise<Poll> =>
  (await (await channel.app.request(`/api/chat/${conversation}/messages?after=${encodeURIComponent(after)}&timeoutMs=${timeoutMs}`)).json()) as Poll;

/** Resolves once a long poll or SSE stream of this test's channels waits for a reply (on the shared subscriber). */
async function blockedInRedis(): Promise<void> {
  await vi.waitFor(async () => {
    expect(channels.some((channel) => channel.waitingReads() > 0)).toBe(true);
    const clients = String(await redis.client('LIST')).split('\n');
    expect(clients.some((line) => line.includes(`name=${prefix}web-wait `) && line.includes('cmd=subscribe'))).toBe(true);
  }, { timeout: 5_000, interval: 10 });
}

/** The `message` events of a response's event stream, once `count` arrived. */
async function readMessages(response: Response, count: number): Promise<Array<{ id?: string; text: string }>> {
  const events = await readSseEvents(response, (list) => list.filter((e) => e.event === 'message').length >= count);
  return events.filter((e) => e.event === 'message').map((e) => ({ id: e.id, text: (JSON.parse(e.data) as { text: string }).text }));
}

describe('web chat on Redis (several gateways)', () => {
  it('a reply sent through gateway A wakes a long poll waiting on gateway B', async () => {
    const [a, b] = [await gateway(), await gateway()];
    const waiting = poll(b, 'conv-1', '0', 10_000);
    await blockedInRedis();
    const sent = await a.send({ chatId: 'conv-1' }, { text: 'It is **4**.', mode: 'formatted' });
    const result = await waiting;
    expect(result.messages).toHaveLength(1);
    const [reply] = result.messages;
    expect(reply).toMatchObject({ id: sent.messageId, text: 'It is **4**.', format: 'markdown' });
    expect(reply!.cursor).toMatch(/^\d+-\d+$/);
    expect(reply!.id).toBe(`web:conv-1:${reply!.cursor}`);
    expect(result.next).toBe(reply!.cursor);
    expect(result.epoch).toBeUndefined();
    // The stream is capped and expires (TTL refreshed on write).
    const ttl = await redis.ttl(webConversationKey('conv-1', prefix));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(7 * 24 * 3600);
  });

  it('an SSE stream on gateway B receives replies sent through gateway A, and resumes on another gateway', async () => {
    const [a, b] = [await gateway(), await gateway()];
    const stream = await b.app.request('/api/chat/conv-2/events');
    const events = readMessages(stream, 2);
    await blockedInRedis();
    await a.send({ chatId: 'conv-2' }, { text: 'one', mode: 'plain' });
    await a.send({ chatId: 'conv-2' }, { text: 'two', mode: 'plain' });
    const received = await events;
    expect(received.map((e) => e.text)).toEqual(['one', 'two']);
    // EventSource reconnects (to any gateway) with Last-Event-ID: only what came after it.
    await b.send({ chatId: 'conv-2' }, { text: 'three', mode: 'plain' });
    const resumed = await a.app.request('/api/chat/conv-2/events', { headers: { 'last-event-id': received[0]!.id! } });
    expect((await readMessages(resumed, 2)).map((e) => e.text)).toEqual(['two', 'three']);
  });

  it('cursors resume across a restart without losing or repeating replies; old in-memory cursors replay the buffer', async () => {
    const first = await gateway();
    await first.send({ chatId: 'conv-3' }, { text: 'r1', mode: 'plain' });
    await first.send({ chatId: 'conv-3' }, { text: 'r2', mode: 'plain' });
    const before = await poll(first, 'conv-3', '0');
    expect(before.messages.map((m) => m.text)).toEqual(['r1', 'r2']);
    await first.stop();

    const restarted = await gateway();
    expect(await poll(restarted, 'conv-3', before.next)).toEqual({ messages: [], next: before.next });
    await restarted.send({ chatId: 'conv-3' }, { text: 'r3', mode: 'plain' });
    const after = await poll(restarted, 'conv-3', before.next);
    expect(after.messages.map((m) => m.text)).toEqual(['r3']);
    expect(after.next).toBe(after.messages[0]!.cursor);
    expect((await poll(restarted, 'conv-3', after.next)).messages).toEqual([]);
    // A cursor of the in-memory store (`<epoch>:<seq>`, or a bare seq) replays the whole buffer.
    expect((await poll(restarted, 'conv-3', '5f1c0a9e2b7d:2')).messages.map((m) => m.text)).toEqual(['r1', 'r2', 'r3']);
    expect((await poll(restarted, 'conv-3', 'garbage')).messages.map((m) => m.text)).toEqual(['r1', 'r2', 'r3']);
  });

  it('stopping the channel ends a long poll blocked in Redis', async () => {
    const b = await gateway();
    const waiting = poll(b, 'conv-4', '0', 30_000);
    await blockedInRedis();
    await b.stop();
    expect(await waiting).toEqual({ messages: [], next: '0-0' });
  });
});
