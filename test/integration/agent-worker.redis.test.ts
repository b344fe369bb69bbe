import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { InboundMessage } from '../../src/core/inbound.js';
import { messageText } from '../../src/core/messages.js';
import { LlmError } from '../../src/errors.js';
import { createLlmClient } from '../../src/llm/client.js';
import { decideRetry } from '../../src/core/retry.js';
import { toFailureClass } from '../../src/llm/errors.js';
import { createSummarizer } from '../../src/llm/summarizer.js';
import type { TurnProducer } from '../../src/queue/producer.js';
import { TURN_SIGNALS, type TurnSignal } from '../../src/queue/signals.js';
import { createSessionStore } from '../../src/redis/session-store.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { readUsage } from '../../src/redis/usage.js';
import { TURN_NOTICES } from '../../workers/agent.processor.js';
import { defineTool } from '../../workers/tools/types.js';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply, type FakeRequest } from '../fakes/openai-server.js';
import { createLogSink } from '../helpers/log-sink.js';
import type { OutboundCollector, TestRedis } from '../helpers/redis.js';
import { openWorkerRig, type WorkerRig, type WorkerStartOptions } from '../helpers/worker-rig.js';

const SESSION = 'web:chat1';
let seq = 0;

function inbound(text: string, chatId = 'chat1'): InboundMessage {
  seq++;
  return { id: `web:${chatId}:${seq}`, channel: 'web', chatId, userId: 'u1', userName: 'Ann', text, attachments: [], receivedAt: Date.now() };
}

const isAgent = (r: FakeRequest) => !String(r.messages[0]?.content).startsWith('You write handoff summaries');

describe('agent worker', () => {
  let rig: WorkerRig;
  let t: TestRedis;
  let fake: FakeOpenAI;
  let producer: TurnProducer;
  let out: OutboundCollector;

  const start = (options: WorkerStartOptions = {}) => rig.start({ concurrency: 2, ...options });

  beforeEach(async () => {
    rig = await openWorkerRig();
    ({ t, fake, producer, out } = rig);
  });
  afterEach(async () => { await rig.close(); });

  it('answers a message, records usage and the transcript, and clears inbox and processing', async () => {
    await start();
    fake.setHandler(() => ({ content: 'hello Ann' }));
    await producer.submitInbound(inbound('hi'));
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]).toMatchObject({ sessionId: SESSION, channel: 'web', chatId: 'chat1', text: 'hello Ann', kind: 'reply' });
    const store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix });
    const keys = store.keys(SESSION);
    expect(await t.redis.llen(keys.inbox)).toBe(0);
    expect(await t.redis.exists(keys.processing)).toBe(0);
    const snapshot = await store.load(SESSION);
    expect(snapshot.entries.map((e) => e.message.role)).toEqual(['user', 'assistant']);
    expect(snapshot.meta.lastPromptTokens).toBe(fake.requests[0].promptTokens);
    const usage = await readUsage(t.redis, keys);
    expect(usage.calls).toBe(1);
    expect(usage.promptTokens).toBe(fake.requests[0].promptTokens);
    expect((await readTranscript(t.redis, keys)).map((e) => e.type)).toEqual(['message', 'message']);
  });

  it('commits a model answer and a tool result holding half an emoji (as U+FFFD): Redis would refuse the escape', async () => {
    await start({ tools: [defineTool({ name: 'weird', description: 'returns half an emoji', schema: z.object({}), run: () => 'broken \ud83d here' })] });
    let calls = 0;
    fake.setHandler(() => (++calls === 1 ? { toolCalls: [{ id: 'w1', name: 'weird', arguments: '{}' }] } : { content: 'thumbs \udc4d up' }));
    await producer.submitInbound(inbound('hi'));
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]?.text).toBe('thumbs \ufffd up');
    const snapshot = await createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix }).load(SESSION);
    expect(snapshot.entries.map((e) => e.message.content)).toContain('broken \ufffd here');
  });

  it('threads a group turn\'s reply to its last message, and never a private one', async () => {
    fake.setHandler(() => ({ content: 'answer' }));
    const inGroup = (userId: string, platformMessageId: string): InboundMessage => ({
      ...inbound(`question from ${userId}`, 'g1'), channel: 'telegram', id: `telegram:g1:${platformMessageId}`, userId, chatType: 'group', platformMessageId,
    });
    // Both are in the inbox before a worker runs, so one turn takes them together.
    await producer.submitInbound(inGroup('u1', '11'));
    await producer.submitInbound(inGroup('u2', '12'));
    await start();
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]).toMatchObject({ sessionId: 'telegram:g1', kind: 'reply', text: 'answer', replyTo: '12' });
    expect(fake.requests).toHaveLength(1);

    await producer.submitInbound({ ...inbound('hi'), chatType: 'private', platformMessageId: 'm1' });
    await out.waitFor((r) => r.length === 2);
    expect(out.replies[1]).toMatchObject({ sessionId: SESSION, kind: 'reply' });
    expect(out.replies[1].replyTo).toBeUndefined();
  });

  it('binds sessionId, channel and jobId on the logs of a turn', async () => {
    const sink = createLogSink('debug');
    await start({ logger: sink.logger });
    fake.setHandler((r) => (r.index === 0 ? { status: 429, headers: { 'retry-after-ms': '1' } } : { content: 'hi' }));
    await producer.submitInbound(inbound('hi'));
    await out.waitFor((r) => r.length === 1);
    const committed = await sink.waitFor((line) => line.msg === 'turn committed');
    const bound = { sessionId: SESSION, channel: 'web', jobId: expect.any(String) };
    expect(committed).toMatchObject({ component: 'worker', ...bound });
    expect(sink.lines.find((line) => line.msg === 'llm call failed, retrying')).toMatchObject({ component: 'llm', status: 429, ...bound });
  });

  it('publishes turn-started, typing and turn-ended signals for the gateway', async () => {
    await start();
    const signals: TurnSignal[] = [];
    let ended = (): void => undefined;
    const done = new Promise<void>((resolve) => { ended = resolve; });
    const unsubscribe = await TURN_SIGNALS.subscribe(t.redis.duplicate(), (signal) => {
      signals.push(signal);
      if (signal.type === 'turn-ended') ended();
    }, t.keyPrefix);
    await producer.submitInbound(inbound('hi'));
    await done;
    await unsubscribe();
    expect(signals.map((s) => s.type)).toEqual(['turn-started', 'typing', 'turn-ended']);
    expect(signals[0]).toMatchObject({ sessionId: SESSION, channel: 'web', chatId: 'chat1' });
  });

  it('turns unknown tools, bad arguments, throwing and slow tools into results and goes on', async () => {
    const boom = defineTool({ name: 'boom', description: 'throws', schema: z.object({}), run: () => { throw new Error('kaput'); } });
    const slow = defineTool({ name: 'slow', description: 'never ends', schema: z.object({}), timeoutMs: 50, run: () => new Promise(() => undefined) });
    await start({ tools: [boom, slow] });
    fake.setHandler((r) => r.messages.some((m) => m.role === 'tool')
      ? { content: 'done' }
      : { toolCalls: [
        { name: 'nope', arguments: {} }, { name: 'calculator', arguments: '{"expression": ' },
        { name: 'calculator', arguments: { expression: 42 } }, { name: 'boom', arguments: {} },
        { name: 'slow', arguments: {} }, { name: 'calculator', arguments: { expression: '2^10 + (3 - 1) * 4' } },
      ] });
    await producer.submitInbound(inbound('go'));
    await out.waitFor((r) => r.length === 1);
    const results = fake.requests[1].messages.filter((m) => m.role === 'tool').map((m) => messageText(m));
    expect(results[0]).toMatch(/^Error: unknown tool "nope"/);
    expect(results[1]).toMatch(/^Error: the arguments of calculator are not valid JSON/);
    expect(results[2]).toMatch(/^Error: invalid arguments for calculator: expression/);
    expect(results[3]).toBe('Error: tool boom failed: kaput');
    expect(results[4]).toBe('Error: tool slow failed: timed out after 50 ms');
    expect(JSON.parse(results[5])).toEqual({ expression: '2^10 + (3 - 1) * 4', result: 1032 });
    expect(out.replies[0].text).toBe('done');
  });

  it('keeps a remembered note in the history (the notes block changes only at compactions) and searches the transcript', async () => {
    await start();
    fake.setHandler((r) => {
      const last = r.messages[r.messages.length - 1];
      if (last.role === 'user' && messageText(last) === 'remember') return { toolCalls: [{ name: 'remember', arguments: { key: 'order', note: 'ORD-77' } }] };
      if (last.role === 'user' && messageText(last) === 'search') return { toolCalls: [{ name: 'search_history', arguments: { query: 'remember' } }] };
      return { content: 'ok' };
    });
    await producer.submitInbound(inbound('remember'));
    await out.waitFor((r) => r.length === 1);
    await producer.submitInbound(inbound('search'));
    await out.waitFor((r) => r.length === 2);
    const last = fake.requests[fake.requests.length - 1];
    expect(last.messages[1].role).toBe('user');
    expect(last.messages.some((m) => m.role === 'tool' && messageText(m) === 'remembered "order"')).toBe(true);
    expect(await t.redis.hgetall(`${t.keyPrefix}{${SESSION}}:notes`)).toEqual({ order: 'ORD-77' });
    expect(messageText(last.messages[last.messages.length - 1])).toMatch(/user: remember/);
  });

  it('retries 429 honouring retry-after, and tells the user when 500s do not stop', async () => {
    await start();
    let calls = 0;
    fake.setHandler(() => (++calls <= 2 ? { status: 429, headers: { 'retry-after-ms': '10' } } : { content: 'finally' }));
    await producer.submitInbound(inbound('a'));
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0].text).toBe('finally');
    fake.setHandler(() => ({ status: 500 }));
    await producer.submitInbound(inbound('b'));
    await out.waitFor((r) => r.length === 2);
    expect(out.replies[1]).toMatchObject({ kind: 'notice', text: TURN_NOTICES.unavailable('HTTP 500') });
  });

  it('caps a giant tool result so the next request still fits the window', async () => {
    const huge = defineTool({ name: 'dump', description: 'huge output', schema: z.object({}), run: () => 'row ORD-1 data '.repeat(20_000) });
    await start({ tools: [huge] });
    fake.setHandler((r) => (r.messages.some((m) => m.role === 'tool') ? { content: 'summarised the dump' } : { toolCalls: [{ name: 'dump', arguments: {} }] }));
    await producer.submitInbound(inbound('dump it'));
    await out.waitFor((r) => r.length === 1);
    expect(fake.requests[1].promptTokens).toBeLessThanOrEqual(16_000);
    const result = messageText(fake.requests[1].messages.find((m) => m.role === 'tool')!);
    expect(result).toContain('[chatgate:trimmed]');
    expect(out.replies[0].text).toBe('summarised the dump');
  });

  it('ends a turn at the model-call limit with a message saying so', async () => {
    await start({ maxModelCalls: 3 });
    fake.setHandler(() => ({ toolCalls: [{ name: 'current_time', arguments: {} }] }));
    await producer.submitInbound(inbound('loop'));
    await out.waitFor((r) => r.length === 1);
    expect(fake.requests).toHaveLength(3);
    expect(out.replies[0]).toMatchObject({ kind: 'notice', text: TURN_NOTICES.maxCalls(3) });
  });

  it('compacts (forced) after "context length exceeded" and retries, and gives up after 4 failures (test 4)', async () => {
    await start();
    fake.setHandler((r) => ({ content: `answer ${r.index}` }));
    for (let i = 0; i < 6; i++) {
      await producer.submitInbound(inbound(`warm-up message ${i} with some words to summarise later`));
      await out.waitFor((r) => r.length === i + 1);
    }
    let failures = 0;
    fake.setHandler((r) => (isAgent(r) && ++failures <= 2 ? { contextLength: true } : isAgent(r) ? { content: 'made it' } : { content: 'summary of the chat' }));
    await producer.submitInbound(inbound('big question'));
    await out.waitFor((r) => r.length === 7);
    expect(out.replies[6].text).toBe('made it');
    const keys = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix }).keys(SESSION);
    const events = (await readTranscript(t.redis, keys)).filter((e) => e.type === 'compaction');
    expect(events.map((e) => e.type === 'compaction' && e.layer)).toEqual(['reactive', 'reactive']);

    const before = fake.requests.filter(isAgent).length;
    fake.setHandler((r) => (isAgent(r) ? { contextLength: true } : { content: 'summary again' }));
    await producer.submitInbound(inbound('another one'));
    await out.waitFor((r) => r.length === 8);
    expect(out.replies[7]).toMatchObject({ kind: 'notice', text: TURN_NOTICES.contextOverflow });
    expect(fake.requests.filter(isAgent).length - before).toBe(4);
    const usage = await readUsage(t.redis, keys);
    expect(Object.entries(usage.compactions).filter(([k]) => k.startsWith('reactive:')).reduce((s, [, n]) => s + n, 0)).toBe(5);
  });
});

describe('llm client and summariser', () => {
  let fake: FakeOpenAI;
  beforeEach(async () => { fake = await startFakeOpenAI(); });
  afterEach(async () => { await fake.close(); });

  it('maps provider errors to LlmError kinds, honouring retry-after', async () => {
    const llm = createLlmClient({ baseURL: fake.baseURL, model: 'm', retry: { maxRetries: 0 } });
    const cases: Array<[FakeReply, string, number | undefined]> = [
      [{ status: 401 }, 'auth', undefined], [{ contextLength: true }, 'context_length', undefined],
      [{ status: 429, headers: { 'retry-after': '3' } }, 'transient', 3000], [{ status: 503 }, 'transient', undefined],
      [{ status: 404 }, 'permanent', undefined],
    ];
    for (const [reply, kind, retryAfterMs] of cases) {
      fake.setHandler(() => reply);
      const error = await llm.complete({ messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(LlmError);
      expect(error).toMatchObject({ kind, retryAfterMs });
    }
    expect(decideRetry(toFailureClass(new LlmError('x', { kind: 'transient', retryAfterMs: 99_000 })), 0)).toEqual({ retry: true, delayMs: 30_000 });
    expect(decideRetry(toFailureClass(new LlmError('x', { kind: 'connection' })), 0)).toEqual({ retry: true, delayMs: 500 });
    expect(decideRetry(toFailureClass(new LlmError('x', { kind: 'transient' })), 4)).toEqual({ retry: false });
    expect(decideRetry(toFailureClass(new LlmError('x', { kind: 'auth' })), 0)).toEqual({ retry: false });
    expect(decideRetry(toFailureClass(new LlmError('x', { kind: 'context_length' })), 0)).toEqual({ retry: false });
  });

  it('writes the prompt from the request and falls back once from the summary model to the main model', async () => {
    fake.setHandler((r) => (r.model === 'cheap' ? { status: 400, message: 'model broken' } : { content: 'the summary' }));
    const summarizer = createSummarizer({ llm: createLlmClient({ baseURL: fake.baseURL, model: 'main', retry: { maxRetries: 0 } }) }, { summaryModel: 'cheap' });
    const answer = await summarizer.summarize({ turns: [{ role: 'user', content: 'order ORD-1' }], previousSummary: 'old summary', focus: 'billing', targetTokens: 2000 });
    expect(answer).toMatchObject({ text: 'the summary', usage: { promptTokens: fake.requests[1].promptTokens } });
    expect(fake.requests.map((r) => r.model)).toEqual(['cheap', 'main']);
    const prompt = messageText(fake.requests[1].messages[1]);
    expect(prompt).toContain('<previous-summary>\nold summary');
    expect(prompt).toContain('Focus especially on: billing');
    expect(prompt).toContain('[user] order ORD-1');
    expect(messageText(fake.requests[1].messages[0])).toContain('## Key decisions and why');
  });
});
