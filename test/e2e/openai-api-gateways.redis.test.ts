/**
 * The API channel with two real gateways on one Redis and one worker (the fake OpenAI server as the
 * model): a request gets its own answer whichever gateway delivers it, never an abandoned request's;
 * a command is answered at once on the gateway it was sent to, whatever waits on another.
 */
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayHandle } from '../../src/gateway/index.js';
import { apiAskingKey } from '../../src/redis/keys.js';
import { apiClientOf, ask, askWhenFree, inSession, userTexts, startSecondGateway } from '../helpers/api-client.js';
import { startStack, type Stack } from '../helpers/stack.js';

const KEY = 'sk-gateways-0123456789abcdef';

/** Released by the test that holds a model call. */
let gate: Promise<void> = Promise.resolve();
let release: () => void = () => undefined;

let stack: Stack;
/** The second gateway (the stack's is the first); closed by the test that closes it earlier. */
let other: GatewayHandle | undefined;

beforeEach(async () => {
  gate = new Promise<void>((resolve) => (release = resolve));
  stack = await startStack({
    handler: (request) => {
      const text = String(request.messages.at(-1)!.content);
      // Written in two pieces, so its live text is shown before the answer is done.
      if (text.startsWith('hold:')) return { hold: gate.then(() => ({ content: 'the late answer', pieces: ['the ', 'late answer'], pieceDelayMs: 200 })) };
      return { content: text.replace(/^say /, '') };
    },
    env: { CHATGATE_API_KEYS: `${KEY}=alice`, CHATGATE_RATE_LIMIT_PER_MINUTE: '1000' },
  });
  other = await startSecondGateway(stack);
});

afterEach(async () => {
  release();
  await other?.close();
  other = undefined;
  await stack.close();
});

const clientOf = (gateway: GatewayHandle) => apiClientOf(gateway, KEY);

describe('the API channel with two gateways', () => {
  it('gives a request its own answer when an abandoned request\'s answer is delivered on its gateway', async () => {
    const first = clientOf(other!);
    const abort = new AbortController();
    const gone = ask(first, 'g1', 'hold: think long', abort.signal).catch((err: unknown) => err);
    await stack.llm.waitForRequest((request) => userTexts(request).at(-1) === 'hold: think long');
    abort.abort();
    expect(await gone).toBeInstanceOf(OpenAI.APIUserAbortError);
    // The first gateway goes: the stack's gateway is the one left to deliver the abandoned answer.
    await other!.close();
    other = undefined;
    const claim = apiAskingKey('alice:g1', stack.t.keyPrefix);
    await until(async () => (await stack.t.redis.exists(claim)) === 0);
    // In line once it claims the session: then the abandoned answer comes.
    const next = askWhenFree(clientOf(stack.gateway), 'g1', 'say fresh');
    await until(async () => (await stack.t.redis.exists(claim)) === 1);
    release();
    expect((await next).choices[0]!.message.content).toBe('fresh');
    expect(userTexts(stack.agentRequests().at(-1)!)).toEqual(['hold: think long', 'say fresh']);
  });

  it('streams a request only its own turn\'s live text, not an abandoned request\'s from another gateway', async () => {
    const abort = new AbortController();
    const gone = ask(clientOf(other!), 'g3', 'hold: think long', abort.signal).catch((err: unknown) => err);
    await stack.llm.waitForRequest((request) => userTexts(request).at(-1) === 'hold: think long');
    abort.abort();
    expect(await gone).toBeInstanceOf(OpenAI.APIUserAbortError);
    // The abandoned request's orphan stays in line on the other gateway; the new request streams here.
    const claim = apiAskingKey('alice:g3', stack.t.keyPrefix);
    await until(async () => (await stack.t.redis.exists(claim)) === 0);
    const streamed = () => clientOf(stack.gateway).chat.completions.create({ model: 'chatgate', messages: [{ role: 'user', content: 'say fresh' }], stream: true }, inSession('g3'));
    let next: Awaited<ReturnType<typeof streamed>> | undefined;
    while (!next) next = await streamed().catch((err: unknown) => (err instanceof OpenAI.ConflictError ? undefined : Promise.reject(err)));
    release();
    let text = '';
    for await (const chunk of next) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('fresh');
  });

  it('answers /usage and /stop at once on their gateway while a request waits for a turn on the other', async () => {
    const turn = ask(clientOf(other!), 'g2', 'hold: plan the trip');
    await stack.llm.waitForRequest((request) => userTexts(request).at(-1) === 'hold: plan the trip');
    const here = clientOf(stack.gateway);
    expect((await ask(here, 'g2', '/usage')).choices[0]!.message.content).toContain('Usage of this chat');
    const stop = await ask(here, 'g2', '/stop');
    expect(stop.choices[0]!.message.content).toMatch(/stop/i);
    expect((await turn).choices[0]!.message.content).toBe('Stopped.');
  });
});

async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5));
}
