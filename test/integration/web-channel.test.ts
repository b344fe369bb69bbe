import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { createDelivery } from '../../src/outbound/delivery.js';
import { createMemoryDeliveryLedger } from '../../src/outbound/delivery-ledger.js';
import { createTypingIndicators } from '../../src/gateway/typing.js';
import { readSseEvents, type SseEvent } from '../helpers/http.js';

let channel: WebChannel;
let server: ServerType;
let base: string;
let received: InboundMessage[];
let failNext: boolean;
/** Resolves the next time a long poll is waiting inside the channel. */
let pollWaiting: Promise<void>;

beforeEach(async () => {
  received = [];
  failNext = false;
  channel = createWebChannel({}, { keepAliveMs: 60_000, typingIntervalMs: 20 });
  await channel.start(async (message) => {
    if (failNext) {
      failNext = false;
      throw new Error('redis down');
    }
    received.push(message);
  });
  let signalPoll: () => void = () => undefined;
  pollWaiting = new Promise((resolve) => (signalPoll = resolve));
  const app = new Hono();
  app.get('/api/chat/:id/messages', async (_c, next) => {
    const handled = next(); // runs synchronously up to the wait, so the poll is listening now
    signalPoll();
    await handled;
  });
  app.route('/', channel.app);
  server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  await channel.stop();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const post = (conversation: string, body: unknown) =>
  fetch(`${base}/api/chat/${conversation}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** The events of `type` in a response's event stream, once `count` arrived. */
async function readEvents(response: Response, type: string, count: number): Promise<SseEvent[]> {
  const events = await readSseEvents(response, (list) => list.filter((e) => e.event === type).length >= count);
  return events.filter((e) => e.event === type);
}

describe('web channel API', () => {
  it('serves the chat page, every file it loads, and only its own scripts (CSP)', async () => {
    const response = await fetch(`${base}/chat`);
    expect(response.headers.get('content-type')).toContain('text/html');
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await response.text();
    const config = html.match(/<script id="chat-config" type="application\/json">(.*?)<\/script>/)?.[1];
    expect(JSON.parse(config ?? 'null')).toEqual({ api: '/api/chat/' });
    expect(html).not.toMatch(/<script>|<script type="text\/javascript">/);
    // Every file the page names, and every module those import, is served with its type.
    const pending = [...html.matchAll(/(?:src|href)="(\/chat\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    const served = new Set<string>();
    while (pending.length > 0) {
      const path = pending.pop()!;
      if (served.has(path)) continue;
      served.add(path);
      const asset = await fetch(`${base}${path}`);
      expect(asset.status, path).toBe(200);
      expect(asset.headers.get('content-type'), path).toMatch(path.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
      const body = await asset.text();
      expect(body, path).not.toContain('sourceMappingURL');
      for (const m of body.matchAll(/^import .* from '\.\/([^']+)';$/gm)) pending.push(new URL(m[1]!, `http://x${path}`).pathname);
    }
    expect([...served].sort()).toEqual(['/chat/assets/chat.css', '/chat/assets/chat.js', '/chat/assets/choices.js', '/chat/assets/composer.js', '/chat/assets/connection.js',
      '/chat/assets/past-chats.js', '/chat/assets/render.js', '/chat/assets/timeline.js', '/chat/assets/vendor/marked.js', '/chat/assets/vendor/purify.js']);
    expect((await fetch(`${base}/chat/assets/../index.ts`)).status).toBe(404);
    expect((await fetch(`${base}/chat/assets/nothing.js`)).status).toBe(404);
    // Sent compressed, and not again while unchanged.
    const first = await fetch(`${base}/chat/assets/vendor/purify.js`);
    expect(first.headers.get('content-encoding')).toBe('gzip');
    const again = await fetch(`${base}/chat/assets/vendor/purify.js`, { headers: { 'if-none-match': first.headers.get('etag')! } });
    expect(again.status).toBe(304);
  });

  it('accepts a message as an InboundMessage of channel web', async () => {
    const response = await post('conv-1', { text: '  hello  ', clientMessageId: 'm1', userId: 'u1', userName: 'Ada' });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ id: 'web:conv-1:m1', accepted: true });
    expect(received).toEqual([
      { id: 'web:conv-1:m1', channel: 'web', chatId: 'conv-1', userId: 'u1', userName: 'Ada', text: 'hello', attachments: [], platformMessageId: 'm1', chatType: 'private', receivedAt: expect.any(Number), refusalsAnswered: true, clientAddress: '127.0.0.1' },
    ]);
  });

  it('accepts half an emoji as U+FFFD and cuts a long name of emoji on a code point', async () => {
    const res = await post('c1', { text: 'ok \ud83d', userName: '😀'.repeat(70) });
    expect(res.status).toBe(202);
    expect(received[0].text).toBe('ok \ufffd');
    expect([...received[0].userName]).toEqual(Array(64).fill('😀'));
  });

  it('refuses text made only of control characters as empty, and accepts text around them', async () => {
    const refused = await post('c1', { text: '\u0000\u0001\u0007\u001b', clientMessageId: 'm1' });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: 'body must be JSON with a non-empty `text`' });
    expect(received).toEqual([]);
    expect((await post('c1', { text: 'hi \u0007', clientMessageId: 'm2' })).status).toBe(202);
    expect(received.map((m) => m.id)).toEqual(['web:c1:m2']);
  });

  it('refuses a post that is not JSON (a cross-site form cannot post into a conversation)', async () => {
    const response = await fetch(`${base}/api/chat/conv-1/messages`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ text: 'hi' }) });
    expect(response.status).toBe(415);
    expect(received).toEqual([]);
  });

  it('answers 503 when the message could not be accepted, so the client retries', async () => {
    failNext = true;
    expect((await post('conv-1', { text: 'x', clientMessageId: 'm2' })).status).toBe(503);
    expect((await post('conv-1', { text: 'x', clientMessageId: 'm2' })).status).toBe(202);
    expect(received.map((m) => m.id)).toEqual(['web:conv-1:m2']);
  });

  it.each([
    ['no text', 'conv-1', { text: '  ' }, 400],
    ['not JSON', 'conv-1', 'nope', 400],
    ['bad conversation id', 'a.b', { text: 'x' }, 400],
    ['body too large', 'conv-1', { text: 'x'.repeat(70_000) }, 413],
  ])('rejects %s', async (_name, conversation, body, status) => {
    const response = await fetch(`${base}/api/chat/${conversation}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    expect(response.status).toBe(status);
    expect(received).toEqual([]);
  });

  it('long-polls: waits for a reply, then returns it with the next cursor', async () => {
    const polling = fetch(`${base}/api/chat/conv-2/messages?after=0&timeoutMs=10000`).then((r) => r.json());
    await pollWaiting;
    await channel.send({ chatId: 'conv-2' }, { text: 'first', mode: 'formatted' });
    const first = (await polling) as { epoch: string };
    const { epoch } = first;
    expect(epoch).toMatch(/^[0-9a-f]{12}$/);
    expect(first).toMatchObject({ messages: [{ epoch, seq: 1, id: `web:conv-2:${epoch}:1`, text: 'first', format: 'markdown' }], next: `${epoch}:1` });
    await channel.send({ chatId: 'conv-2' }, { text: 'second', mode: 'plain' });
    const again = await (await fetch(`${base}/api/chat/conv-2/messages?after=${epoch}:1&timeoutMs=0`)).json();
    expect(again).toMatchObject({ messages: [{ seq: 2, text: 'second', format: 'text' }], next: `${epoch}:2` });
    expect(await (await fetch(`${base}/api/chat/conv-2/messages?after=${epoch}:2&timeoutMs=0`)).json()).toEqual({ messages: [], epoch, next: `${epoch}:2` });
    // A bare seq is taken as the current epoch.
    expect(await (await fetch(`${base}/api/chat/conv-2/messages?after=1&timeoutMs=0`)).json()).toMatchObject({ messages: [{ seq: 2 }], next: `${epoch}:2` });
  });

  it('streams replies by SSE, replaying those after Last-Event-ID', async () => {
    await channel.send({ chatId: 'conv-3' }, { text: 'one', mode: 'formatted' });
    await channel.send({ chatId: 'conv-3' }, { text: 'two', mode: 'formatted' });
    const { epoch } = (await (await fetch(`${base}/api/chat/conv-3/messages?after=0&timeoutMs=0`)).json()) as { epoch: string };
    const response = await fetch(`${base}/api/chat/conv-3/events`, { headers: { 'last-event-id': `${epoch}:1` } });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reading = readEvents(response, 'message', 2);
    const delivery = createDelivery({ channels: new Map([['web', channel]]), ledger: createMemoryDeliveryLedger() });
    await delivery.deliver({ id: 'r1', sessionId: 'web:conv-3', channel: 'web', chatId: 'conv-3', text: 'three', kind: 'reply' });
    const events = await reading;
    expect(events.map((e) => [e.id, JSON.parse(e.data).text])).toEqual([[`${epoch}:2`, 'two'], [`${epoch}:3`, 'three']]);
  });

  it('after a restart (a new epoch), a cursor of the old epoch gets the new replies instead of skipping them', async () => {
    for (const text of ['one', 'two', 'three']) await channel.send({ chatId: 'conv-5' }, { text, mode: 'plain' });
    const old = (await (await fetch(`${base}/api/chat/conv-5/messages?after=0&timeoutMs=0`)).json()) as { epoch: string; next: string };
    expect(old.next).toBe(`${old.epoch}:3`);

    const restarted = createWebChannel({}, { keepAliveMs: 60_000 });
    await restarted.start(async () => undefined);
    await restarted.send({ chatId: 'conv-5' }, { text: 'after restart', mode: 'plain' });
    const poll = (await (await restarted.app.request(`/api/chat/conv-5/messages?after=${old.next}&timeoutMs=0`)).json()) as { epoch: string; next: string; messages: Array<{ epoch: string; seq: number; text: string }> };
    expect(poll.epoch).not.toBe(old.epoch);
    expect(poll.messages.map((m) => [m.epoch, m.seq, m.text])).toEqual([[poll.epoch, 1, 'after restart']]);
    expect(poll.next).toBe(`${poll.epoch}:1`);
    const idle = (await (await restarted.app.request(`/api/chat/conv-6/messages?after=${old.epoch}:9&timeoutMs=0`)).json()) as { epoch: string; next: string };
    expect(idle.next).toBe(`${idle.epoch}:0`);

    const response = await restarted.app.request('/api/chat/conv-5/events', { headers: { 'last-event-id': old.next } });
    const events = await readEvents(response, 'message', 1);
    expect(events.map((e) => [e.id, JSON.parse(e.data).text])).toEqual([[`${poll.epoch}:1`, 'after restart']]);
    await restarted.stop();
  });

  it('sends typing hints to SSE listeners', async () => {
    const response = await fetch(`${base}/api/chat/conv-4/events`);
    const typing = createTypingIndicators();
    // The loop renews the hint, so it reaches the stream whenever the stream starts listening.
    typing.start('web:conv-4', channel, { chatId: 'conv-4' });
    const events = await readEvents(response, 'typing', 2);
    typing.stopAll();
    expect(events.map((e) => e.data)).toEqual(['{}', '{}']);
  });
});
