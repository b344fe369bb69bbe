/**
 * The OpenAI-compatible API end to end: the official `openai` SDK (and plain curl) against a real
 * gateway + worker on real Redis, the fake OpenAI server as the model. The API channel is built
 * from CHATGATE_API_KEYS, as `chatgate gateway` builds it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import type { FakeHandler, FakeRequest } from '../fakes/openai-server.js';
import { startStack, type Stack } from '../helpers/stack.js';

const KEY = 'sk-alice-0123456789abcdef';
const BOB_KEY = 'sk-bob-0123456789abcdefgh';
const ANSWER = 'The answer is **4**, as always — 🎉';

/** Released by the test that holds a model call. */
let gate: Promise<void> = Promise.resolve();

/** Answers by the user's last words: `tool:` first calls the calculator, `hold:` waits for `gate`, `say <x>` says x. */
const handler: FakeHandler = (request) => {
  const last = request.messages[request.messages.length - 1]!;
  if (last.role === 'tool') return { content: `computed ${String(last.content)}`, pieceDelayMs: 2 };
  const text = String(last.content);
  if (text.includes('hold:')) return { hold: gate.then(() => ({ content: 'the late answer' })) };
  if (text.includes('tool:')) return { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] };
  const say = /say (.+)$/.exec(text);
  return { content: say ? say[1]! : ANSWER, pieceDelayMs: 2 };
};

let stack: Stack;
let client: OpenAI;

beforeAll(async () => {
  stack = await startStack({ handler, env: { CHATGATE_API_KEYS: `${KEY}=alice,${BOB_KEY}=bob`, CHATGATE_RATE_LIMIT_PER_MINUTE: '1000' }, worker: { liveReplyPublishIntervalMs: 5 } });
  client = new OpenAI({ baseURL: `${stack.gateway.httpUrl}/v1`, apiKey: KEY, maxRetries: 0 });
});

afterAll(async () => {
  await stack?.close();
});

const session = (name: string) => ({ headers: { 'X-Chatgate-Session': name } });
const userTexts = (request: FakeRequest) => request.messages.filter((m) => m.role === 'user').map((m) => String(m.content));

describe('the OpenAI-compatible API', () => {
  it('lists its model and answers a completion through the session api:<user>:<session>', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['chatgate']);
    const completion = await client.chat.completions.create({ model: 'chatgate', messages: [{ role: 'user', content: 'hello' }] }, session('s1'));
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]!.message).toMatchObject({ role: 'assistant', content: ANSWER });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + completion.usage!.completion_tokens);
    const detail = await sessionLedger('api:alice:s1');
    expect(detail).toMatchObject({ promptTokens: completion.usage!.prompt_tokens, completionTokens: completion.usage!.completion_tokens });
  });

  it('keeps the history: a client that sends it whole adds only its trailing user messages', async () => {
    const first = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'say one' }] }, session('hist'));
    expect(first.choices[0]!.message.content).toBe('one');
    const second = await client.chat.completions.create({
      model: 'x',
      messages: [
        { role: 'system', content: 'client system prompt (ignored)' },
        { role: 'user', content: 'say one' },
        { role: 'assistant', content: 'one' },
        { role: 'user', content: 'first part' },
        { role: 'user', content: [{ type: 'text', text: 'say two' }] },
      ],
    }, session('hist'));
    expect(second.choices[0]!.message.content).toBe('two');
    const request = stack.agentRequests().at(-1)!;
    expect(userTexts(request)).toEqual(['say one', 'first part\n\nsay two']);
    expect(request.messages.some((m) => String(m.content).includes('client system prompt'))).toBe(false);
    // A client that sends only its newest message talks in the same session.
    const third = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'say three' }] }, session('hist'));
    expect(third.choices[0]!.message.content).toBe('three');
    expect(userTexts(stack.agentRequests().at(-1)!)).toEqual(['say one', 'first part\n\nsay two', 'say three']);
  });

  it('streams chat.completion.chunks, then a usage chunk when asked, then [DONE]', async () => {
    const stream = await client.chat.completions.create({ model: 'chatgate', messages: [{ role: 'user', content: 'stream please' }], stream: true, stream_options: { include_usage: true } }, session('st'));
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk' && chunk.id === chunks[0]!.id)).toBe(true);
    const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(ANSWER);
    // The text came in several pieces while it was written, not in one at the end.
    expect(chunks.filter((chunk) => (chunk.choices[0]?.delta.content ?? '') !== '').length).toBeGreaterThan(1);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    const usage = chunks.at(-1)!;
    expect(usage.choices).toEqual([]);
    expect(usage.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(await sessionLedger('api:alice:st')).toMatchObject({ promptTokens: usage.usage!.prompt_tokens, completionTokens: usage.usage!.completion_tokens });
  });

  it('runs tool calls inside chatgate: the client sees the answer only; /usage and the usage reported agree', async () => {
    const reported = { prompt: 0, completion: 0 };
    for (const content of ['tool: work it out', 'say done']) {
      const completion = await client.chat.completions.create({ model: 'chatgate', messages: [{ role: 'user', content }] }, session('tools'));
      expect(completion.choices[0]!.message.tool_calls ?? []).toEqual([]);
      reported.prompt += completion.usage!.prompt_tokens;
      reported.completion += completion.usage!.completion_tokens;
      if (content.startsWith('tool')) expect(completion.choices[0]!.message.content).toMatch(/^computed .*"result":42/);
    }
    const usage = await client.chat.completions.create({ model: 'chatgate', messages: [{ role: 'user', content: '/usage' }] }, session('tools'));
    const text = usage.choices[0]!.message.content!;
    expect(text).toContain('Usage of this chat');
    const figures = /Tokens: ([\d,]+) in .*, ([\d,]+) out, (\d+) model calls/.exec(text);
    expect(figures).not.toBeNull();
    expect(Number(figures![1]!.replace(/,/g, ''))).toBe(reported.prompt);
    expect(Number(figures![2]!.replace(/,/g, ''))).toBe(reported.completion);
    expect(Number(figures![3])).toBe(3);
    // A command costs no model call.
    expect(usage.usage).toMatchObject({ prompt_tokens: 0, completion_tokens: 0 });
  });

  it('answers OpenAI-shaped errors: a bad or missing key (401), a bad body (400), no messages (400)', async () => {
    const bad = new OpenAI({ baseURL: `${stack.gateway.httpUrl}/v1`, apiKey: 'sk-wrong-0123456789abcdef', maxRetries: 0 });
    const unauthorised = await bad.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
    expect(unauthorised).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(unauthorised).toMatchObject({ status: 401, code: 'invalid_api_key', type: 'invalid_request_error' });
    const noMessages = await client.chat.completions.create({ model: 'x', messages: [] }).catch((err: unknown) => err);
    expect(noMessages).toBeInstanceOf(OpenAI.BadRequestError);
    expect(noMessages).toMatchObject({ status: 400, param: 'messages' });
    const missing = await client.chat.completions.create({ model: 'x' } as never).catch((err: unknown) => err);
    expect(missing).toMatchObject({ status: 400, param: 'messages' });
    const endsWithAssistant = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }] }).catch((err: unknown) => err);
    expect(endsWithAssistant).toMatchObject({ status: 400, param: 'messages' });
    const raw = await fetch(`${stack.gateway.httpUrl}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: '{not json' });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_json' } });
    const noKey = await fetch(`${stack.gateway.httpUrl}/v1/models`);
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toMatchObject({ error: { code: 'invalid_api_key', message: expect.any(String) } });
  });

  it('keeps users apart: the same session name of another key is another session', async () => {
    const bob = new OpenAI({ baseURL: `${stack.gateway.httpUrl}/v1`, apiKey: BOB_KEY, maxRetries: 0 });
    await bob.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'say bob here' }] }, session('s1'));
    expect(userTexts(stack.agentRequests().at(-1)!)).toEqual(['say bob here']);
    expect(await sessionLedger('api:bob:s1')).toMatchObject({ calls: 1 });
  });

  it('a request that went away leaves its answer behind: the next request of the session gets its own', async () => {
    let release: () => void = () => undefined;
    gate = new Promise<void>((resolve) => (release = resolve));
    const abort = new AbortController();
    const gone = client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hold: think long' }] }, { ...session('gone'), signal: abort.signal }).catch((err: unknown) => err);
    await stack.llm.waitForRequest((request) => userTexts(request).at(-1) === 'hold: think long');
    abort.abort();
    expect(await gone).toBeInstanceOf(OpenAI.APIUserAbortError);
    // The gateway notices the abort when the connection closes: until then the session is busy (409).
    // A stream answers its status as soon as the message is taken.
    let next: Awaited<ReturnType<typeof streamed>> | undefined;
    const streamed = () => client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'say fresh' }], stream: true }, session('gone'));
    while (!next) next = await streamed().catch((err: unknown) => (err instanceof OpenAI.ConflictError ? undefined : Promise.reject(err)));
    release();
    let text = '';
    for await (const chunk of next) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('fresh');
    expect(userTexts(stack.agentRequests().at(-1)!)).toEqual(['hold: think long', 'say fresh']);
  });

  it('keeps one request at a time while a turn runs in steer mode: the second gets 409 at once and joins nothing; the first its one answer', async () => {
    let release: () => void = () => undefined;
    gate = new Promise<void>((resolve) => (release = resolve));
    const first = client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hold: plan the trip' }] }, session('steer'));
    await stack.llm.waitForRequest((request) => userTexts(request).at(-1) === 'hold: plan the trip');
    const second = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'say by train' }] }, session('steer')).catch((err: unknown) => err);
    expect(second).toBeInstanceOf(OpenAI.ConflictError);
    expect(second).toMatchObject({ status: 409, code: 'session_busy' });
    release();
    expect((await first).choices[0]!.message.content).toBe('the late answer');
    // Sent again once the first is answered, it is a turn of its own with its own answer.
    const again = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'say by train' }] }, session('steer'));
    expect(again.choices[0]!.message.content).toBe('by train');
    const transcript = await readTranscript(stack.t.redis, sessionKeys('api:alice:steer', stack.t.keyPrefix));
    const said = transcript.flatMap((e) => (e.type === 'message' ? [`${e.message.role}:${String(e.message.content)}`] : []));
    expect(said).toEqual(['user:hold: plan the trip', 'assistant:the late answer', 'user:say by train', 'assistant:by train']);
  });

  it.runIf(existsSync('/usr/bin/curl'))('answers plain curl, whole and streamed', async () => {
    const run = promisify(execFile);
    const args = (body: object) => ['-sS', '-X', 'POST', `${stack.gateway.httpUrl}/v1/chat/completions`, '-H', `Authorization: Bearer ${KEY}`, '-H', 'Content-Type: application/json', '-H', 'X-Chatgate-Session: curl', '-d', JSON.stringify(body)];
    const whole = await run('curl', args({ model: 'chatgate', messages: [{ role: 'user', content: 'say from curl' }] }));
    expect(JSON.parse(whole.stdout)).toMatchObject({ object: 'chat.completion', choices: [{ message: { role: 'assistant', content: 'from curl' } }] });
    const streamed = await run('curl', ['-N', ...args({ model: 'chatgate', messages: [{ role: 'user', content: 'say streamed' }], stream: true })]);
    const events = streamed.stdout.split('\n\n').map((block) => block.trim()).filter((block) => block.startsWith('data: ')).map((block) => block.slice(6));
    expect(events.at(-1)).toBe('[DONE]');
    const text = events.slice(0, -1).map((data) => (JSON.parse(data) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('streamed');
  });
});

/** The session's usage ledger in Redis (what `/usage` reads). */
async function sessionLedger(sessionId: string): Promise<{ promptTokens: number; completionTokens: number; calls: number }> {
  const raw = await stack.t.redis.hgetall(sessionKeys(sessionId, stack.t.keyPrefix).usage);
  return { promptTokens: Number(raw.promptTokens ?? 0), completionTokens: Number(raw.completionTokens ?? 0), calls: Number(raw.calls ?? 0) };
}
