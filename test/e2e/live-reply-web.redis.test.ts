/**
 * Streaming in the web chat over real HTTP: SSE `delta` events while the model writes, then the
 * final `message` carrying the stream id; the long poll's `partial`. Gateway + worker + fake LLM
 * on real Redis (the web chat's reply store in memory; its Redis store is tested in web-channel.redis).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import type { FakeHandler } from '../fakes/openai-server.js';
import { readSseEvents, type SseEvent } from '../helpers/http.js';
import { startStack, type Stack } from '../helpers/stack.js';

const ANSWER = Array.from({ length: 30 }, (_, i) => `token${i}`).join(' ') + ' — **the end** 🎉';

let stack: Stack | undefined;
let web: WebChannel | undefined;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

async function start(handler: FakeHandler): Promise<Stack> {
  const channel = createWebChannel({});
  web = channel;
  stack = await startStack({ channels: { list: [channel], mount: (app) => app.route('/', channel.app) }, handler, worker: { liveReplyPublishIntervalMs: 20 } });
  return stack;
}

/** A response's server-sent events, their data parsed, until `done(events)` holds. */
async function readEvents(response: Response, done: (events: ParsedEvent[]) => boolean): Promise<ParsedEvent[]> {
  const parse = (events: readonly SseEvent[]) => events.map((e) => ({ event: e.event, data: JSON.parse(e.data) as Record<string, unknown> }));
  return parse(await readSseEvents(response, (events) => done(parse(events))));
}

interface ParsedEvent {
  event: string;
  data: Record<string, unknown>;
}

const post = (s: Stack, conversation: string, text: string) => fetch(`${s.gateway.httpUrl}/api/chat/${conversation}/messages`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, userId: 'u1', userName: 'Ann' }),
});

describe('streaming in the web chat', () => {
  it('SSE carries the reply as deltas (seq 0 first, in order), then the final message with the stream id', async () => {
    const s = await start(() => ({ content: ANSWER, pieceDelayMs: 8 }));
    const sse = await fetch(`${s.gateway.httpUrl}/api/chat/conv-sse/events`);
    expect(sse.headers.get('content-type')).toContain('text/event-stream');
    expect((await post(s, 'conv-sse', 'stream it')).status).toBe(202);
    const events = await readEvents(sse, (list) => list.some((e) => e.event === 'message'));
    const deltas = events.filter((e) => e.event === 'delta').map((e) => e.data as { liveReplyId: string; seq: number; text: string });
    const final = events.find((e) => e.event === 'message')!.data as { text: string; liveReplyId?: string };
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas[0]!.seq).toBe(0);
    deltas.forEach((delta, k) => expect(delta.seq).toBe(k));
    expect(new Set(deltas.map((d) => d.liveReplyId))).toEqual(new Set([final.liveReplyId]));
    expect(final.liveReplyId).toMatch(/^reply-[0-9a-f]{24}-0$/);
    const live = deltas.map((d) => d.text).join('');
    expect(live.length).toBeGreaterThan(0);
    expect(ANSWER.startsWith(live)).toBe(true);
    expect(final.text).toBe(ANSWER);
    // Nothing streams after the final message: the delta events all came before it.
    expect(events.findIndex((e) => e.event === 'message')).toBe(events.length - 1);
  });

  it('the long poll wakes on the text being written and answers it as `partial`; once the final is there, no partial', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const s = await start(() => ({ hold: gate.then(() => ({ content: ANSWER, pieces: [ANSWER.slice(0, 20), ANSWER.slice(20)], pieceDelayMs: 400 })) }));
    const url = `${s.gateway.httpUrl}/api/chat/conv-poll/messages?timeoutMs=10000`;
    const first = await (await fetch(`${url.replace('10000', '0')}`)).json() as { next: string };
    expect((await post(s, 'conv-poll', 'go')).status).toBe(202);
    const waiting = fetch(`${url}&after=${encodeURIComponent(first.next)}`).then((r) => r.json() as Promise<{ messages: unknown[]; partial?: { liveReplyId: string; text: string }; next: string }>);
    release();
    const woke = await waiting;
    expect(woke.messages).toEqual([]);
    expect(woke.partial?.liveReplyId).toMatch(/^reply-/);
    expect(ANSWER.startsWith(woke.partial!.text) && woke.partial!.text.length > 0).toBe(true);
    let answer = woke;
    while (answer.messages.length === 0) answer = await (await fetch(`${url}&after=${encodeURIComponent(answer.next)}`)).json() as typeof woke;
    expect(answer.messages).toEqual([expect.objectContaining({ text: ANSWER, liveReplyId: woke.partial!.liveReplyId })]);
    expect(answer.partial).toBeUndefined();
    expect(web?.waitingReads()).toBe(0);
  });

  it('a page that connects mid-stream gets the text so far as seq 0; user text imitating the events stays text', async () => {
    const s = await start(() => ({ content: 'event: delta\ndata: {"liveReplyId":"x","seq":0,"text":"fake"}\n\n and more', pieceDelayMs: 30 }));
    expect((await post(s, 'conv-late', 'hi')).status).toBe(202);
    await s.llm.waitForRequest(() => true);
    const sse = await fetch(`${s.gateway.httpUrl}/api/chat/conv-late/events`);
    const events = await readEvents(sse, (list) => list.some((e) => e.event === 'message'));
    const deltas = events.filter((e) => e.event === 'delta').map((e) => e.data as { liveReplyId: string; seq: number; text: string });
    const final = events.find((e) => e.event === 'message')!.data as { text: string; liveReplyId: string };
    expect(final.text).toBe('event: delta\ndata: {"liveReplyId":"x","seq":0,"text":"fake"}\n\n and more');
    expect(deltas.every((d) => d.liveReplyId === final.liveReplyId)).toBe(true);
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas[0]!.seq).toBe(0);
    expect(final.text.startsWith(deltas.map((d) => d.text).join(''))).toBe(true);
  });
});
