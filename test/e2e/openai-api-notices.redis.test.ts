/**
 * Notices that answer a turn in place of its reply, over the API channel with two real gateways on
 * one Redis and one worker (the fake OpenAI server as the model), with a request that went away:
 * "Stopped.", a failed turn's notice and a spend-limit refusal each go to the request whose message
 * they answer, by identity, never to a newer request in line.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayOptions } from '../../src/cli/compose.js';
import { readerFor } from '../../src/cli/sessions.js';
import { loadConfig } from '../../src/config.js';
import { startGateway, type GatewayHandle } from '../../src/gateway/index.js';
import { createSilentLogger } from '../../src/log.js';
import { apiAskingKey, sessionKeys } from '../../src/redis/keys.js';
import type { FakeReply } from '../fakes/openai-server.js';
import { apiClientOf, ask, askWhenFree, userTexts } from '../helpers/api-client.js';
import { startStack, type Stack } from '../helpers/stack.js';

const KEY = 'sk-notices-0123456789abcdef';

/** Opened by the test that holds a model call (`hold:`). */
let gate: Promise<void> = Promise.resolve();
let release: () => void = () => undefined;

let stack: Stack | undefined;
/** The second gateway (the stack's is the first); closed by the test once its request went away. */
let other: GatewayHandle | undefined;

/** The stack and a second gateway; `held` answers the held model call once the gate opens. */
async function start(held: () => FakeReply, env: Record<string, string> = {}, worker = {}): Promise<void> {
  gate = new Promise<void>((resolve) => (release = resolve));
  stack = await startStack({
    handler: (request) => {
      const last = request.messages.at(-1)!;
      if (last.role === 'tool') return { content: `computed ${String(last.content)}` };
      const text = String(last.content);
      if (text.startsWith('hold:')) return { hold: gate.then(held) };
      return { content: text.replace(/^say /, '') };
    },
    env: { CHATGATE_API_KEYS: `${KEY}=alice`, CHATGATE_RATE_LIMIT_PER_MINUTE: '1000', ...env }, worker,
  });
  other = await startGateway({ redis: stack.t.redis, logger: createSilentLogger(), sessions: readerFor(stack.config, { redis: stack.t.redis }) }, gatewayOptions(stack.config));
}

afterEach(async () => {
  release();
  await other?.close();
  other = undefined;
  await stack?.close();
  stack = undefined;
});

const clientOf = (gateway: GatewayHandle) => apiClientOf(gateway, KEY);
const textOf = (completion: OpenAI.Chat.Completions.ChatCompletion) => completion.choices[0]!.message.content ?? '';

/**
 * Sends `content` into session `name` on the second gateway and goes away once the model was asked;
 * then that gateway closes: the stack's gateway is the one left to deliver what answers it.
 */
async function abandon(name: string, content: string): Promise<void> {
  const abort = new AbortController();
  const gone = ask(clientOf(other!), name, content, abort.signal).catch((err: unknown) => err);
  await stack!.llm.waitForRequest((request) => userTexts(request).at(-1) === content);
  abort.abort();
  expect(await gone).toBeInstanceOf(OpenAI.APIUserAbortError);
  await other!.close();
  other = undefined;
  await until(async () => (await stack!.t.redis.exists(apiAskingKey(`alice:${name}`, stack!.t.keyPrefix))) === 0);
}

/**
 * A new request into `name` on the stack's gateway, once its message waits in the inbox behind the
 * held turn. Its answer comes boxed: an async function returning the promise would wait for it.
 */
async function askBehindHeldTurn(name: string): Promise<{ next: Promise<OpenAI.Chat.Completions.ChatCompletion> }> {
  const next = askWhenFree(clientOf(stack!.gateway), name, 'say fresh');
  await until(async () => (await stack!.t.redis.llen(sessionKeys(`api:alice:${name}`, stack!.t.keyPrefix).inbox)) === 1);
  return { next };
}

describe('notices in place of an answer over the API channel with two gateways', () => {
  it('gives "Stopped." to the stopped turn\'s request, not to a newer request in line', async () => {
    await start(() => ({ content: 'the late answer' }));
    await abandon('n1', 'hold: think long');
    const { next } = await askBehindHeldTurn('n1');
    expect(textOf(await ask(clientOf(stack!.gateway), 'n1', '/stop'))).toMatch(/stop/i);
    // The abandoned turn's "Stopped." is dropped; the new request gets its own turn's answer.
    expect(textOf(await next)).toBe('fresh');
  });

  it('gives a failed turn\'s notice to its request, not to a newer request in line', async () => {
    await start(() => ({ status: 400, message: 'bad request' }));
    await abandon('n2', 'hold: think long');
    const { next } = await askBehindHeldTurn('n2');
    release();
    expect(textOf(await next)).toBe('fresh');
  });

  it('gives a turn\'s spend-limit refusal to its request, not to a newer request in line', async () => {
    // The turn's cap leaves room for one call (its worst case), not for the call after the tool.
    // Queued, the new message waits for a turn of its own (steered in, the refused turn would answer it too).
    const env = { CHATGATE_BUDGET_TURN_MAX_TOKENS: '5000', CHATGATE_BUSY_MODE: 'queue' };
    await start(() => ({ toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }], usage: { prompt_tokens: 10, completion_tokens: 2000 } }), env, { budgets: loadConfig(env).budgets });
    await abandon('n3', 'hold: compute it');
    const { next } = await askBehindHeldTurn('n3');
    release();
    // Not the abandoned turn's 429: the new request's turn is within the cap.
    expect(textOf(await next)).toBe('fresh');
  });
});

async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5));
}
