import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isWellFormedText } from '../../src/core/text.js';
import { LlmError } from '../../src/errors.js';
import { createLlmClient, type CompletionRequest, type LlmClientOptions } from '../../src/llm/client.js';
import { startDemoModel } from '../../src/llm/demo-model.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';

const MODEL = 'gpt-4o-mini';
const TOOLS: CompletionRequest['tools'] = [{ type: 'function', function: { name: 'lookup', description: 'find an order', parameters: { type: 'object', properties: { id: { type: 'string' } } } } }];

describe('llm client streaming', () => {
  let fake: FakeOpenAI;
  const client = (options: Partial<LlmClientOptions> = {}) => createLlmClient({ baseURL: fake.baseURL, apiKey: 'sk-test', model: MODEL, retry: { baseDelayMs: 1, maxRetries: 2 }, ...options });
  const ask = (text = 'hello'): CompletionRequest => ({ messages: [{ role: 'user', content: text }] });

  beforeEach(async () => {
    fake = await startFakeOpenAI();
  });
  afterEach(async () => {
    await fake.close();
  });

  it('streams text: the deltas arrive in order, and the answer and usage equal the non-streamed ones', async () => {
    const text = 'The order ORD-48213-XK ships on Monday. 🚚 Anything else?';
    fake.setHandler(() => ({ content: text }));
    const deltas: string[] = [];
    const streamed = await client().complete({ ...ask(), onDelta: (d) => deltas.push(d) });
    const plain = await client({ stream: false }).complete(ask());
    expect(fake.requests.map((r) => r.stream)).toEqual([true, false]);
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join('')).toBe(text);
    expect(streamed).toEqual(plain);
    expect(streamed.usage).toEqual({ promptTokens: fake.requests[0]!.promptTokens, completionTokens: expect.any(Number), cachedTokens: 0 });
    expect(streamed.finishReason).toBe('stop');
  });

  it('assembles tool calls by index, their arguments concatenated, exactly as the non-streamed call returns them', async () => {
    fake.setHandler(() => ({ content: 'Let me look.', toolCalls: [{ name: 'lookup', arguments: { id: 'ORD-1' } }, { name: 'lookup', arguments: '{"id":"ORD-\\u00e9-2"}' }] }));
    const streamed = await client().complete({ ...ask(), tools: TOOLS });
    const plain = await client({ stream: false }).complete({ ...ask(), tools: TOOLS });
    expect(streamed.message.tool_calls).toEqual([
      { id: 'call_0_0', type: 'function', function: { name: 'lookup', arguments: '{"id":"ORD-1"}' } },
      { id: 'call_0_1', type: 'function', function: { name: 'lookup', arguments: '{"id":"ORD-\\u00e9-2"}' } },
    ]);
    expect({ ...streamed.message, tool_calls: streamed.message.tool_calls?.map((c) => c.function) }).toEqual({ ...plain.message, tool_calls: plain.message.tool_calls?.map((c) => c.function) });
    expect(streamed.finishReason).toBe('tool_calls');
    expect(streamed.usage?.promptTokens).toBe(plain.usage?.promptTokens);
  });

  it('takes tool call indices that do not start at 0 (a gateway numbering the provider\'s content blocks), in their order', async () => {
    const chunk = (delta: unknown, finish: string | null = null) => JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] });
    const call = (index: number, id: string, args: string) => ({ tool_calls: [{ index, id, type: 'function', function: { name: 'lookup', arguments: args } }] });
    fake.setHandler(() => ({ sse: [chunk({ content: 'Looking.' }), chunk(call(1, 'toolu_1', '{"id":"ORD-1"}')), chunk(call(2, 'toolu_2', '{"id":"ORD-2"}')), chunk({}, 'tool_calls'), '[DONE]'] }));
    const result = await client({ retry: { maxRetries: 0 } }).complete({ ...ask(), tools: TOOLS });
    expect(result.message).toEqual({ role: 'assistant', content: 'Looking.', tool_calls: [
      { id: 'toolu_1', type: 'function', function: { name: 'lookup', arguments: '{"id":"ORD-1"}' } },
      { id: 'toolu_2', type: 'function', function: { name: 'lookup', arguments: '{"id":"ORD-2"}' } },
    ] });
  });

  it('takes each call sent whole at index 0, or with no index, as a call of its own (a new id begins one)', async () => {
    const chunk = (delta: unknown, finish: string | null = null) => JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] });
    const part = (index: number | undefined, id: string | undefined, name: string | undefined, args: string) =>
      ({ tool_calls: [{ ...(index === undefined ? {} : { index }), ...(id ? { id, type: 'function' } : {}), function: { ...(name ? { name } : {}), arguments: args } }] });
    const expected = [
      { id: 'call_a', type: 'function', function: { name: 'lookup', arguments: '{"id":"ORD-1"}' } },
      { id: 'call_b', type: 'function', function: { name: 'lookup', arguments: '{"id":"ORD-2"}' } },
    ];
    for (const index of [0, undefined]) {
      fake.setHandler(() => ({ sse: [
        chunk(part(index, 'call_a', 'lookup', '{"id":')), chunk(part(index, undefined, undefined, '"ORD-1"}')),
        chunk(part(index, 'call_b', 'lookup', '{"id":"ORD-2"}')), chunk({}, 'tool_calls'), '[DONE]',
      ] }));
      const result = await client({ retry: { maxRetries: 0 } }).complete({ ...ask(), tools: TOOLS });
      expect(result.message.tool_calls, `index ${index}`).toEqual(expected);
    }
  });

  it('falls back to a plain call when the endpoint answers a streamed request with a JSON body, and remembers it', async () => {
    fake.setStreaming('json');
    fake.setHandler(() => ({ content: 'plain answer' }));
    const llm = client();
    const deltas: string[] = [];
    expect((await llm.complete({ ...ask(), onDelta: (d) => deltas.push(d) })).message.content).toBe('plain answer');
    expect((await llm.complete(ask())).message.content).toBe('plain answer');
    expect(fake.requests.map((r) => r.stream)).toEqual([true, false]);
    expect(deltas).toEqual([]);
  });

  it('falls back to a plain call when the endpoint refuses stream_options by name (400), and remembers it', async () => {
    fake.setStreaming('refuse');
    fake.setHandler(() => ({ content: 'answer', usage: { prompt_tokens: 7, completion_tokens: 2 } }));
    const llm = client({ retry: { maxRetries: 0 } });
    const result = await llm.complete(ask());
    expect(result.message.content).toBe('answer');
    expect(result.usage).toEqual({ promptTokens: 7, completionTokens: 2, cachedTokens: 0 });
    await llm.complete(ask());
    expect(fake.requests.map((r) => r.stream)).toEqual([true, false, false]);
  });

  it('retries a stream that dies mid-way: onRestart voids the partial text and the answer holds only the retry\'s text', async () => {
    fake.setHandler((request) => (request.index === 0 ? { content: 'first attempt text', cutAfter: 2 } : { content: 'second attempt' }));
    const events: string[] = [];
    const result = await client().complete({ ...ask(), onDelta: (d) => events.push(d), onRestart: () => events.push('<restart>') });
    expect(result.message.content).toBe('second attempt');
    const restart = events.indexOf('<restart>');
    expect(restart).toBeGreaterThan(0);
    const partial = events.slice(0, restart).join('');
    expect(partial.length).toBeGreaterThan(0);
    expect('first attempt text'.startsWith(partial) && partial !== 'first attempt text').toBe(true);
    expect(events.slice(restart + 1).join('')).toBe('second attempt');
    expect(fake.requests).toHaveLength(2);
  });

  it('a malformed chunk is a clear transient error (retried, then thrown when retries run out)', async () => {
    fake.setHandler(() => ({ sse: ['{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}', '[DONE]'] }));
    const error = await client({ retry: { maxRetries: 1, baseDelayMs: 1 } }).complete(ask()).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(LlmError);
    expect(error).toMatchObject({ kind: 'transient' });
    expect((error as LlmError).message).toMatch(/malformed stream chunk/);
    expect(fake.requests).toHaveLength(2);
  });

  it('an error event inside the stream, or a stream that ends without a finish, is transient', async () => {
    fake.setHandler((request) => request.index === 0
      ? { sse: ['{"error":{"message":"overloaded, try again","type":"server_error"}}'] }
      : request.index === 1 ? { sse: ['{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"half"},"finish_reason":null}]}'] } : { content: 'whole' });
    const result = await client().complete(ask());
    expect(result.message.content).toBe('whole');
    expect(fake.requests).toHaveLength(3);
  });

  it('keeps text well-formed when a surrogate pair is split across chunks, and replaces lone surrogates', async () => {
    fake.setHandler(() => ({ content: 'a😀b\ud800c', pieces: ['a\ud83d', '\ude00b', '\ud800', 'c'] }));
    const deltas: string[] = [];
    const result = await client().complete({ ...ask(), onDelta: (d) => deltas.push(d) });
    expect(result.message.content).toBe('a😀b\ufffdc');
    expect(deltas.join('')).toBe('a😀b\ufffdc');
    for (const delta of deltas) expect(isWellFormedText(delta)).toBe(true);
  });

  it('the abort signal stops a stream mid-way with kind aborted, never retried', async () => {
    const controller = new AbortController();
    fake.setHandler(() => ({ content: 'a long answer that keeps coming', pieceDelayMs: 20 }));
    const error = await client().complete({ ...ask(), signal: controller.signal, onDelta: () => controller.abort() }).catch((err: unknown) => err);
    expect(error).toMatchObject({ kind: 'aborted' });
    expect(fake.requests).toHaveLength(1);
  });

  it('the offline demo model streams too, with the same answer and usage as its plain answers', async () => {
    const demo = await startDemoModel();
    try {
      const demoClient = (stream: boolean) => createLlmClient({ baseURL: demo.baseUrl, model: demo.model, stream });
      const deltas: string[] = [];
      const streamed = await demoClient(true).complete({ messages: [{ role: 'user', content: 'hello there, how are you today?' }], onDelta: (d) => deltas.push(d) });
      const plain = await demoClient(false).complete({ messages: [{ role: 'user', content: 'hello there, how are you today?' }] });
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.join('')).toBe(streamed.message.content);
      expect(streamed).toEqual(plain);
    } finally {
      await demo.close();
    }
  });

  it('a stream that stalls longer than the timeout fails as a timeout and is retried', async () => {
    fake.setHandler((request) => (request.index === 0 ? { content: 'slow words', pieceDelayMs: 400 } : { content: 'fast' }));
    const result = await client({ timeoutMs: 150 }).complete(ask());
    expect(result.message.content).toBe('fast');
    expect(fake.requests).toHaveLength(2);
  });
});
