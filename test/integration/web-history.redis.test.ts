/**
 * GET /api/chat/:id/history over a real Redis transcript: what it shows of each kind of entry, how
 * it pages, where live replies continue (`after`), and its refusals.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import type { TranscriptSource } from '../../channels/web/history.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscriptBefore } from '../../src/redis/transcript.js';
import { createAccessGuard } from '../../src/monitor/index.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const AT = 1_767_225_600_000;

describe('web chat history endpoint', () => {
  let t: TestRedis;
  let channel: WebChannel;
  const api = (path: string, init?: RequestInit): Promise<Response> => Promise.resolve(channel.app.request(`http://localhost/api/chat/${path}`, init));
  const append = async (conversation: string, entries: object[]): Promise<void> => {
    for (const entry of entries) await t.redis.xadd(sessionKeys(`web:${conversation}`, t.keyPrefix).transcript, '*', 'data', JSON.stringify(entry));
  };
  const source: TranscriptSource = (sessionId, before, count) => readTranscriptBefore(t.redis, sessionKeys(sessionId, t.keyPrefix), before, count);

  beforeEach(async () => {
    t = createTestRedis();
    channel = createWebChannel({ redis: t.redis, keyPrefix: t.keyPrefix, readTranscript: source });
    await channel.start(async () => undefined);
  });

  afterEach(async () => {
    await channel.stop();
    await t.cleanup();
  });

  it('shows user messages and final answers, not tool rounds, summaries or compactions', async () => {
    await append('kinds', [
      { type: 'message', message: { role: 'user', content: 'what time is it?\n[attachments: clock.png, notes.txt]' }, tokens: 5, inboundId: 'web:kinds:m1', atMs: AT },
      { type: 'message', message: { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'clock', arguments: '{}' } }] }, tokens: 5, atMs: AT + 1 },
      { type: 'message', message: { role: 'tool', tool_call_id: 'c1', content: '12:00' }, tokens: 2, atMs: AT + 2 },
      { type: 'message', message: { role: 'assistant', content: 'It is **noon**.' }, tokens: 4, replyId: 'reply-aaa-0', atMs: AT + 3 },
      { type: 'compaction', layer: 'summary', outcome: 'compacted', tokensBefore: 100, tokensAfter: 50, durationMs: 5, atMs: AT + 4 },
      { type: 'message', message: { role: 'user', content: '[chatgate:summary] Goal: tell the time.' }, tokens: 5, atMs: AT + 5 },
      { type: 'reset', removedMessages: 4, tokensBefore: 20, atMs: AT + 6 },
      { type: 'message', message: { role: 'user', content: [{ type: 'text', text: 'and this picture?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }, tokens: 9, atMs: AT + 7 },
      { type: 'message', message: { role: 'assistant', content: '   ' }, tokens: 1, atMs: AT + 8 },
    ]);
    const res = await api('kinds/history');
    expect(res.status).toBe(200);
    const body = await res.json() as { messages: Array<{ id: string }>; before: string | null; after: string };
    expect(body.before).toBeNull();
    expect(body.messages).toEqual([
      { id: 'web:kinds:m1', role: 'user', text: 'what time is it?', format: 'text', at: AT, attachments: [{ kind: 'file', fileName: 'clock.png' }, { kind: 'file', fileName: 'notes.txt' }] },
      { id: 'reply-aaa-0', role: 'assistant', text: 'It is **noon**.', format: 'markdown', at: AT + 3 },
      { id: expect.stringMatching(/^\d+-\d+$/), role: 'user', text: 'and this picture?', format: 'text', at: AT + 7, attachments: [{ kind: 'photo', fileName: 'image' }] },
    ]);
    expect(body.after).toBe('0-0');
  });

  it('pages backwards: oldest first in a page, `before` null exactly when nothing older is left', async () => {
    await append('pages', Array.from({ length: 10 }, (_, k) => ({ type: 'message', message: { role: k % 2 ? 'assistant' : 'user', content: `m${k}` }, tokens: 1, atMs: AT + k })));
    const texts = async (query: string): Promise<{ texts: string[]; before: string | null }> => {
      const body = await (await api(`pages/history?${query}`)).json() as { messages: Array<{ text: string }>; before: string | null };
      return { texts: body.messages.map((m) => m.text), before: body.before };
    };
    const first = await texts('limit=4');
    expect(first.texts).toEqual(['m6', 'm7', 'm8', 'm9']);
    const second = await texts(`limit=4&before=${first.before}`);
    expect(second.texts).toEqual(['m2', 'm3', 'm4', 'm5']);
    const third = await texts(`limit=2&before=${second.before}`);
    expect(third).toEqual({ texts: ['m0', 'm1'], before: null });
    expect(await texts('limit=10')).toEqual({ texts: Array.from({ length: 10 }, (_, k) => `m${k}`), before: null });
    expect((await texts('')).texts).toHaveLength(10);
  });

  it('names the reply cursor where live replies continue, so the buffer is not replayed over the history', async () => {
    await channel.send({ chatId: 'live' }, { text: 'already in the history', mode: 'plain', deliveryId: 'reply-one-0#0' });
    const { after } = await (await api('live/history')).json() as { after: string };
    expect(after).toMatch(/^\d+-\d+$/);
    await channel.send({ chatId: 'live' }, { text: 'new', mode: 'plain', deliveryId: 'reply-two-0#0' });
    const poll = await (await api(`live/messages?after=${after}&timeoutMs=0`)).json() as { messages: Array<{ text: string; replyId?: string }> };
    expect(poll.messages).toMatchObject([{ text: 'new', replyId: 'reply-two-0' }]);
  });

  it('shows the notices and command answers the chat showed (not in the transcript) in time order, each once, on the newest page only', async () => {
    const now = Date.now();
    await append('notes', [
      { type: 'message', message: { role: 'user', content: 'old question' }, tokens: 1, inboundId: 'web:notes:m0', atMs: now - 60_000 },
      { type: 'message', message: { role: 'assistant', content: 'old answer' }, tokens: 1, replyId: 'reply-old-0', atMs: now - 59_000 },
      { type: 'message', message: { role: 'user', content: 'first' }, tokens: 1, inboundId: 'web:notes:m1', atMs: now - 2_000 },
      { type: 'message', message: { role: 'assistant', content: 'An answer in **two** chunks' }, tokens: 1, replyId: 'reply-one-0', atMs: now - 1_000 },
      { type: 'message', message: { role: 'user', content: 'second, then /stop' }, tokens: 1, inboundId: 'web:notes:m2', atMs: now - 500 },
    ]);
    // Delivered after their transcript entries: the answer (two chunks, one reply id), a notice, a command's answer.
    await channel.send({ chatId: 'notes' }, { text: 'An answer in ', mode: 'formatted', deliveryId: 'reply-one-0#0' });
    await channel.send({ chatId: 'notes' }, { text: '**two** chunks', mode: 'formatted', deliveryId: 'reply-one-0#1' });
    await channel.send({ chatId: 'notes' }, { text: 'Stopped.', mode: 'plain', deliveryId: 'notice-two-0#0' });
    await channel.send({ chatId: 'notes' }, { text: 'Nothing is running right now, so there is nothing to stop.', mode: 'plain', deliveryId: 'command-three-0#0' });
    const page = await (await api('notes/history?limit=3')).json() as { messages: Array<{ id: string; role: string; text: string; at: number }>; before: string | null };
    expect(page.messages.map((m) => `${m.role}: ${m.text}`)).toEqual([
      'user: first', 'assistant: An answer in **two** chunks', 'user: second, then /stop', 'assistant: Stopped.', 'assistant: Nothing is running right now, so there is nothing to stop.',
    ]);
    expect(new Set(page.messages.map((m) => m.id)).size).toBe(5);
    expect(page.messages.at(-1)!.at).toBeGreaterThanOrEqual(now);
    // An older page is the transcript's alone.
    const older = await (await api(`notes/history?before=${page.before}`)).json() as { messages: Array<{ text: string }> };
    expect(older.messages.map((m) => m.text)).toEqual(['old question', 'old answer']);
  });

  it('refuses a bad cursor or limit, and answers 503 when the transcript cannot be read', async () => {
    expect((await api('x/history?before=1-0;DROP')).status).toBe(400);
    expect(await (await api('x/history?limit=0')).json()).toEqual({ error: '`limit` must be an integer from 1 to 100 (got 0)' });
    expect((await api('x/history?limit=2.5')).status).toBe(400);
    expect((await api('x/history?limit=101')).status).toBe(400);
    expect((await api('bad%20id/history')).status).toBe(400);
    const failing = createWebChannel({ readTranscript: async () => { throw new Error('READONLY'); } });
    const res = await failing.app.request('http://localhost/api/chat/x/history');
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: 'history not available right now (the store could not be read); retry' });
    const none = createWebChannel({});
    expect(await (await none.app.request('http://localhost/api/chat/x/history')).json()).toEqual({ messages: [], before: null });
  });

  it('goes through the access guard like every /api/chat route', async () => {
    const guarded = createWebChannel({ readTranscript: source, guard: createAccessGuard({ host: '0.0.0.0', monitorToken: 'secret-token-123456', tokenOnLoopback: false }) });
    expect((await guarded.app.request('http://gw.example/api/chat/x/history')).status).toBe(401);
    const ok = await guarded.app.request('http://gw.example/api/chat/x/history', { headers: { authorization: 'Bearer secret-token-123456' } });
    expect(ok.status).toBe(200);
    // `/` keeps the login query for /chat's guard; the favicon is open.
    const root = await guarded.app.request('http://gw.example/?token=secret-token-123456&c=a');
    expect(root.headers.get('location')).toBe('/chat?token=secret-token-123456&c=a');
    expect((await guarded.app.request('http://gw.example/favicon.ico')).status).toBe(200);
    expect((await guarded.app.request('http://gw.example/chat/assets/chat.js')).status).toBe(401);
  });
});
