/**
 * `/stop` reaches the worker that holds the session, wherever it runs: a `chatgate worker` child
 * process stopped through the gateway's web API in this process; and an in-process worker whose
 * tool is running, stopped from another Redis connection (as a second gateway would).
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createWebChannel } from '../../channels/web/index.js';
import { gatewayOptions } from '../../src/cli/compose.js';
import { readerFor } from '../../src/cli/sessions.js';
import { loadConfig } from '../../src/config.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { messageText } from '../../src/core/messages.js';
import { startGateway, type GatewayHandle } from '../../src/gateway/index.js';
import { stopTurn } from '../../src/turn-stop/stop-command.js';
import { createSilentLogger } from '../../src/log.js';
import { createTurnProducer, type TurnProducer } from '../../src/queue/producer.js';
import { duplicateRedis } from '../../src/redis/client.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { createSessionStore } from '../../src/redis/session-store.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { runWorker, type RunningWorker } from '../../workers/main.js';
import { defineTool } from '../../workers/tools/types.js';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply } from '../fakes/openai-server.js';
import { spawnCliWorker, startModelsFront } from '../helpers/cli-worker.js';
import { collectOutbound, createTestRedis, type OutboundCollector, type TestRedis } from '../helpers/redis.js';

const HANG: FakeReply = { hold: new Promise<FakeReply>(() => undefined) };

describe('/stop across processes', () => {
  let t: TestRedis;
  let fake: FakeOpenAI;
  const closers: Array<() => Promise<unknown>> = [];

  beforeEach(async () => {
    t = createTestRedis();
    fake = await startFakeOpenAI();
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await fake.close();
    await t.cleanup();
  });

  it('a /stop posted to the gateway stops the turn a `chatgate worker` process is running', async () => {
    const front = await startModelsFront(fake.baseURL);
    closers.push(() => front.close());
    const child: ChildProcess = await spawnCliWorker({ redisUrl: t.url, keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, baseURL: front.baseURL });
    closers.push(async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    });
    const gateway = await startWebGateway(t, front.baseURL);
    closers.push(() => gateway.close());
    let hang = true;
    fake.setHandler(() => (hang ? HANG : { content: 'short answer' }));
    const chat = webChat(gateway.httpUrl, 'stop-conv');

    await chat.post('tell me everything', 'm1');
    await fake.waitForRequest(() => true);
    await chat.post('/stop', 'm2');
    expect(await chat.nextReply()).toBe('Stopped.');
    hang = false;
    await chat.post('and now?', 'm3');
    expect(await chat.nextReply()).toBe('short answer');
    expect(messageText(fake.requests.at(-1)!.messages.at(-1)!)).toBe('and now?');
    const entries = (await createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix }).load('web:stop-conv')).entries;
    expect(entries.map((e) => messageText(e.message))).toEqual(['tell me everything', 'and now?', 'short answer']);
  });

  describe('with an in-process worker', () => {
    let worker: RunningWorker;
    let producer: TurnProducer;
    let out: OutboundCollector;
    let toolSawAbort: Promise<void>;
    let toolStarted: Promise<void>;

    beforeEach(async () => {
      let sawAbort!: () => void;
      let started!: () => void;
      toolSawAbort = new Promise((resolve) => { sawAbort = resolve; });
      toolStarted = new Promise((resolve) => { started = resolve; });
      const slow = defineTool({
        name: 'slow_search', description: 'Searches for a long time.', schema: z.object({}), timeoutMs: 600_000,
        run: (_args, context) => new Promise<string>((resolve) => {
          started();
          context.signal.addEventListener('abort', () => { sawAbort(); resolve('partial results'); }, { once: true });
        }),
      });
      worker = await runWorker({ redis: t.redis, tools: [slow] }, {
        keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, contextWindow: 16_000,
        llm: { baseURL: fake.baseURL, apiKey: 'test-key', model: 'gpt-4o-mini', retry: { baseDelayMs: 5, maxRetries: 2 } },
      });
      producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix });
      out = await collectOutbound(t);
      closers.push(() => worker.close(), () => producer.close(), () => out.close());
    });

    it('stops a running tool: the earlier round stays, the stopped round is dropped and not resumed, the next message is answered', async () => {
      fake.setHandler((request) => {
        const last = request.messages.at(-1)!;
        if (last.role === 'user' && messageText(last) === 'book it') return { toolCalls: [{ id: 'c-time', name: 'current_time', arguments: {} }] };
        if (last.role === 'tool' && last.tool_call_id === 'c-time') return { toolCalls: [{ id: 'c-slow', name: 'slow_search', arguments: {} }] };
        return { content: `answer to ${messageText(last)}` };
      });
      await producer.submitInbound(inbound('book it', 1));
      await fake.waitForRequest((r) => r.messages.at(-1)?.role === 'tool');
      // Another connection, as a second gateway would use: the stop travels through Redis only.
      const other = duplicateRedis(t.redis);
      closers.push(async () => other.disconnect());
      const keys = sessionKeys('web:c1', t.keyPrefix);
      await toolStarted;
      expect(await stopTurn(other, 'web:c1', t.keyPrefix)).toBeNull();
      await toolSawAbort;
      await out.waitFor((replies) => replies.length === 1);
      expect(out.replies[0]).toMatchObject({ text: 'Stopped.', kind: 'notice' });
      expect(await t.redis.exists(keys.steps, keys.processing, keys.stop)).toBe(0);
      const store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix });
      const projection = (await store.load('web:c1')).entries.map((e) => e.message);
      expect(projection.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
      expect(JSON.stringify(projection)).not.toContain('c-slow');
      expect(JSON.stringify(await readTranscript(t.redis, keys))).not.toContain('partial results');

      await producer.submitInbound(inbound('thanks', 2));
      await out.waitFor((replies) => replies.length === 2);
      expect(out.replies[1]).toMatchObject({ text: 'answer to thanks', kind: 'reply' });
      expect(JSON.stringify(fake.requests.at(-1)!.messages)).not.toContain('c-slow');
      expect(await stopTurn(other, 'web:c1', t.keyPrefix)).toBe('Nothing is running right now, so there is nothing to stop.');
    });
  });
});

let seq = 0;
function inbound(text: string, n: number): InboundMessage {
  seq++;
  return { id: `web:c1:${n}-${seq}`, channel: 'web', chatId: 'c1', userId: 'u1', userName: 'Ann', text, attachments: [], receivedAt: Date.now() };
}

async function startWebGateway(t: TestRedis, baseURL: string): Promise<GatewayHandle> {
  const config = loadConfig({
    REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, OPENAI_BASE_URL: baseURL, OPENAI_API_KEY: 'test-key',
    CHATGATE_MODEL: 'gpt-4o-mini', CHATGATE_CONTEXT_WINDOW: '16000', CHATGATE_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'silent',
  });
  const web = createWebChannel({});
  return startGateway({ redis: t.redis, logger: createSilentLogger(), sessions: readerFor(config, { redis: t.redis }), channels: { list: [web], mount: (app) => app.route('/', web.app) } }, gatewayOptions(config));
}

/** The web chat API of one conversation: post a message, read the next reply (long poll). */
function webChat(httpUrl: string, conversation: string) {
  let cursor = '0';
  const base = `${httpUrl}/api/chat/${conversation}/messages`;
  return {
    async post(text: string, clientMessageId: string): Promise<void> {
      const res = await fetch(base, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, clientMessageId }) });
      expect(res.status).toBe(202);
    },
    async nextReply(): Promise<string> {
      for (;;) {
        const body = (await (await fetch(`${base}?after=${encodeURIComponent(cursor)}&timeoutMs=5000`)).json()) as { messages: Array<{ text: string }>; next: string };
        cursor = body.next;
        if (body.messages.length > 0) return body.messages[0]!.text;
      }
    },
  };
}
