/**
 * Refused messages are never dropped without a word: every rate-limited message is answered,
 * commands count toward the limit only when they call the model (`/btw`, `/compact`, `/retry`), and the web chat refuses synchronously (429 with
 * Retry-After, 413), also per client address. Real Redis; the clock of the ingest is fixed, so
 * a minute boundary never falls inside a test.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import type { InboundMessage, OutboundMessage } from '../../src/core/inbound.js';
import { createIngest, type Ingest } from '../../src/gateway/ingest.js';
import { createSilentLogger } from '../../src/log.js';
import { resolveQueueNames } from '../../src/queue/names.js';
import { openOutboundQueue, type OutboundQueue } from '../../src/outbound/outbound-queue.js';
import { createTurnProducer, type TurnProducer } from '../../src/queue/producer.js';
import { createSessionStore } from '../../src/redis/session-store.js';
import { createLlmSessionOps } from '../../src/session/session-ops.js';
import { createRedisSessionView } from '../../src/redis/session-reader.js';
import { createTestRedis, readOutboundStreams, type TestRedis } from '../helpers/redis.js';
import { pollUntil } from '../helpers/waits.js';

const LIMIT = 2;
const NOW = Date.UTC(2026, 0, 1, 12, 0, 10); // 50 s before the window ends

let t: TestRedis;
let producer: TurnProducer;
let outbound: OutboundQueue;
let ingest: Ingest;

function setup(maxMessageChars = 40, btw?: (sessionId: string, question: string) => Promise<string | null>): void {
  const logger = createSilentLogger();
  const names = resolveQueueNames({ queuePrefix: t.queuePrefix });
  const store = createSessionStore({ redis: t.redis, logger }, { keyPrefix: t.keyPrefix });
  producer = createTurnProducer({ redis: t.redis }, { ...names, keyPrefix: t.keyPrefix });
  outbound = openOutboundQueue(t.redis, names);
  const limits = { model: 'fake-model', summaryModel: 'fake-model', contextWindow: 16_000, reservedOutputTokens: 0 };
  const ops = createLlmSessionOps({ redis: t.redis, logger, store }, { baseURL: 'http://127.0.0.1:9/v1', threshold: 0.5, hygieneThreshold: 0.85, limits, keyPrefix: t.keyPrefix, leaseTtlMs: 10_000 });
  const view = createRedisSessionView({ redis: t.redis }, { keyPrefix: t.keyPrefix, contextWindow: 16_000, reservedOutputTokens: 0, model: 'fake-model', threshold: 0.5, hygieneThreshold: 0.85 });
  ingest = createIngest({ redis: t.redis, producer, ops, outbound, logger, now: () => NOW, commands: { view, turnPosition: async () => ({ state: 'none' }), btw } }, {
    keyPrefix: t.keyPrefix, allow: { telegram: '*', discord: '*', web: '*', api: '*' }, rateLimitPerMinute: LIMIT, maxMessageChars, groupMode: 'per-chat',
  });
}

let seq = 0;
function telegram(text: string, from = 42): InboundMessage {
  seq++;
  return { id: `telegram:${from}:${seq}`, channel: 'telegram', chatId: String(from), userId: String(from), userName: 'Ada', text, attachments: [], platformMessageId: String(seq), chatType: 'private', receivedAt: NOW };
}

async function notices(): Promise<OutboundMessage[]> {
  return (await readOutboundStreams(t)).sort((a, b) => a.id.localeCompare(b.id));
}

beforeEach(() => {
  t = createTestRedis();
  setup();
});

afterEach(async () => {
  await producer.close();
  await t.cleanup();
});

describe('ingest refusals', () => {
  it('answers every rate-limited message, quoting it, not only the first', async () => {
    const messages = [1, 2, 3, 4, 5].map((n) => telegram(`message ${n}`));
    const outcomes = [];
    for (const message of messages) outcomes.push(await ingest.handle(message));
    expect(outcomes).toEqual(['accepted', 'accepted', 'rate_limited', 'rate_limited', 'rate_limited']);
    const refusals = await notices();
    expect(refusals).toHaveLength(3);
    expect(refusals.map((n) => n.replyTo).sort()).toEqual(messages.slice(2).map((m) => m.platformMessageId).sort());
    for (const notice of refusals) expect(notice).toMatchObject({ kind: 'notice', chatId: '42', text: expect.stringMatching(/faster than 2 a minute.*50 s/) });
    // Each names the message it answers (an API request takes only its own message's answer).
    for (const notice of refusals) expect(notice.answers).toEqual([messages.find((m) => m.platformMessageId === notice.replyTo)!.id]);
    // A re-delivery of a refused message is answered once.
    expect(await ingest.handle(messages[4]!)).toBe('rate_limited');
    expect(await notices()).toHaveLength(3);
  });

  it('does not count chat commands toward the limit', async () => {
    const commands = ['/usage', '/help', '/status'].map((text) => telegram(text));
    for (const command of commands) expect(await ingest.handle(command)).toBe('command');
    // A command's answer names the message it answers.
    expect((await notices()).map((notice) => notice.answers?.join()).sort()).toEqual(commands.map((command) => command.id).sort());
    expect(await ingest.handle(telegram('one'))).toBe('accepted');
    expect(await ingest.handle(telegram('two'))).toBe('accepted');
    expect(await ingest.handle(telegram('/usage'))).toBe('command');
    expect(await ingest.handle(telegram('three'))).toBe('rate_limited');
  });

  it('counts /btw, /compact and /retry toward the limit: each calls the model', async () => {
    const asked: string[] = [];
    setup(40, async (_sessionId, question) => {
      asked.push(question);
      return 'an answer';
    });
    const outcomes = [];
    for (const n of [1, 2, 3, 4]) outcomes.push(await ingest.handle(telegram(`/btw question ${n}`)));
    expect(outcomes).toEqual(['command', 'command', 'rate_limited', 'rate_limited']);
    expect(await ingest.handle(telegram('/compact'))).toBe('rate_limited');
    expect(await ingest.handle(telegram('/retry'))).toBe('rate_limited');
    // Commands without a model call are still answered.
    expect(await ingest.handle(telegram('/usage'))).toBe('command');
    await pollUntil(() => asked.length >= 2);
    await ingest.idle();
    expect(asked).toEqual(['question 1', 'question 2']);
  });
});

describe('web chat refusals', () => {
  let web: WebChannel;
  let server: ServerType;
  let base: string;

  async function startWeb(): Promise<void> {
    web = createWebChannel({});
    await web.start((message) => ingest.receive(message));
    const app = new Hono();
    app.route('/', web.app);
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  afterEach(async () => {
    await web?.stop();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const post = (conversation: string, body: Record<string, unknown>) =>
    fetch(`${base}/api/chat/${conversation}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('refuses over the limit with 429 and Retry-After at once, with no refusal in the stream', async () => {
    await startWeb();
    expect((await post('c1', { text: 'one', userId: 'u1' })).status).toBe(202);
    expect((await post('c1', { text: 'two', userId: 'u1' })).status).toBe(202);
    const refused = await post('c1', { text: 'three', userId: 'u1', clientMessageId: 'm3' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('50');
    expect(((await refused.json()) as { error: string }).error).toMatch(/faster than 2 a minute/);
    expect(await notices()).toEqual([]);
  });

  it('holds the limit per client address: a fresh userId and conversation per message does not bypass it', async () => {
    await startWeb();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await post(`fresh${i}`, { text: `hello ${i}`, userId: `user${i}` })).status);
    expect(statuses).toEqual([202, 202, 429, 429]);
  });

  it('refuses a message over the size limit with 413 at once', async () => {
    await startWeb();
    const res = await post('c2', { text: 'far more than forty characters, in one message', userId: 'u2' });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: string }).error).toMatch(/the limit is 40/);
    expect(await notices()).toEqual([]);
  });
});
