/**
 * Approvals over the API channel with two real gateways on one Redis and one worker (the fake
 * OpenAI server as the model), with requests that went away: an approval question goes to the
 * request whose turn asks it, and a resumed turn's answer and live text go to the `/approve`
 * requests that resumed it, by identity, never to another request in line. A tool round that asks
 * two questions is answered with both, and an `/approve` that leaves its turn waiting with the
 * question left.
 */
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApprovalStore } from '../../src/approvals/store.js';
import { loadConfig } from '../../src/config.js';
import type { ApprovalRecord } from '../../src/core/approval.js';
import type { GatewayHandle } from '../../src/gateway/index.js';
import { apiAskingKey, sessionKeys } from '../../src/redis/keys.js';
import { apiClientOf, ask, askWhenFree, inSession, userTexts, startSecondGateway } from '../helpers/api-client.js';
import { startStack, type Stack } from '../helpers/stack.js';

const KEY = 'sk-approvals-0123456789abcdef';
const APPROVAL = { CHATGATE_TOOL_APPROVAL: 'calculator=ask' };

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
      const last = request.messages.at(-1)!;
      // The answer after the tools, written in pieces: its live text comes before it.
      if (last.role === 'tool') return { content: 'computed 42', pieces: ['computed ', '42'], pieceDelayMs: 200 };
      const text = String(last.content);
      const call = (k: number) => ({ name: 'calculator', arguments: { expression: '6*7' }, id: `call_${request.index}_${k}` });
      if (text.startsWith('hold:')) return { hold: gate.then(() => ({ toolCalls: [call(0)] })) };
      if (text.startsWith('twice:')) return { toolCalls: [call(0), call(1)] };
      return { content: text.replace(/^say /, '') };
    },
    env: { CHATGATE_API_KEYS: `${KEY}=alice`, CHATGATE_RATE_LIMIT_PER_MINUTE: '1000', ...APPROVAL },
    worker: { toolApproval: loadConfig(APPROVAL).approvals.rules },
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
const textOf = (completion: OpenAI.Chat.Completions.ChatCompletion) => completion.choices[0]!.message.content ?? '';

/** The session's approvals, oldest first, once `ready` holds for them. */
async function approvalsOf(name: string, ready: (records: ApprovalRecord[]) => boolean): Promise<ApprovalRecord[]> {
  const store = createApprovalStore(stack.t.redis, { keyPrefix: stack.t.keyPrefix });
  for (;;) {
    const records = await store.list(`api:alice:${name}`);
    if (ready(records)) return records;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Two questions open (one model answer with two asked calls), the first approved: the turn waits for the second. @returns the second approval's id. */
async function oneQuestionLeft(client: OpenAI, name: string): Promise<string> {
  expect(textOf(await ask(client, name, 'twice: compute both'))).toContain('**Approval needed**');
  const [first, second] = await approvalsOf(name, (records) => records.length === 2);
  expect(textOf(await ask(client, name, `/approve ${first!.id}`))).toContain(`/approve ${second!.id}`);
  return second!.id;
}

describe('approvals over the API channel with two gateways', () => {
  it('gives an approval question to the request whose turn asks it, not to a newer request', async () => {
    const abort = new AbortController();
    const gone = ask(clientOf(other!), 'q1', 'hold: compute it', abort.signal).catch((err: unknown) => err);
    await stack.llm.waitForRequest((request) => userTexts(request).at(-1) === 'hold: compute it');
    abort.abort();
    expect(await gone).toBeInstanceOf(OpenAI.APIUserAbortError);
    // The first gateway goes: the stack's gateway is the one left to deliver the abandoned turn's question.
    await other!.close();
    other = undefined;
    const claim = apiAskingKey('alice:q1', stack.t.keyPrefix);
    await until(async () => (await stack.t.redis.exists(claim)) === 0);
    const here = clientOf(stack.gateway);
    const next = askWhenFree(here, 'q1', 'say fresh');
    // Its message waits in the inbox behind the held turn (which takes it when it resumes).
    await until(async () => (await stack.t.redis.llen(sessionKeys('api:alice:q1', stack.t.keyPrefix).inbox)) === 1);
    release();
    const [asked] = await approvalsOf('q1', (records) => records.length === 1);
    // The question is no answer of `next`. Deciding it resumes the turn, which takes `next`'s message too: one answer for both.
    expect(textOf(await ask(here, 'q1', `/approve ${asked!.id}`))).toBe('fresh');
    expect(textOf(await next)).toBe('fresh');
  });

  it('gives a resumed turn\'s answer to the /approve request that resumed it, and drops the copy of an abandoned request before it', async () => {
    const here = clientOf(stack.gateway);
    const second = await oneQuestionLeft(here, 'r1');
    // A message sent while the turn waits, its request gone: it waits in the inbox for the resumed turn.
    const abort = new AbortController();
    const gone = ask(here, 'r1', 'say later', abort.signal).catch((err: unknown) => err);
    const inbox = sessionKeys('api:alice:r1', stack.t.keyPrefix).inbox;
    await until(async () => (await stack.t.redis.lrange(inbox, 0, -1)).some((item) => item.includes('say later')));
    abort.abort();
    expect(await gone).toBeInstanceOf(OpenAI.APIUserAbortError);
    // The turn resumes now and takes that message too: its answer follows both, and the abandoned request's copy is dropped.
    expect(textOf(await ask(here, 'r1', `/approve ${second}`))).toBe('later');
  });

  it('streams a resumed turn\'s live text to the /approve request that resumed it', async () => {
    const here = clientOf(stack.gateway);
    const second = await oneQuestionLeft(here, 'r2');
    const stream = await here.chat.completions.create({ model: 'chatgate', messages: [{ role: 'user', content: `/approve ${second}` }], stream: true }, inSession('r2'));
    const pieces: string[] = [];
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) pieces.push(chunk.choices[0].delta.content);
    // The live text came in its pieces, then the answer added nothing.
    expect(pieces).toEqual(['computed ', '42']);
  });
});

describe('a tool round that asks two questions, over the API channel', () => {
  it('answers with both questions, an /approve of one with the other, and the last /approve with the turn\'s answer', async () => {
    const here = clientOf(stack.gateway);
    // Asked through the second gateway: either gateway may deliver either question (the relay carries it).
    const asked = textOf(await ask(clientOf(other!), 'b1', 'twice: compute both'));
    const [first, second] = await approvalsOf('b1', (records) => records.length === 2);
    for (const record of [first!, second!]) expect(asked).toContain(`/approve ${record.id}`);
    // The turn still waits for the second decision: the first is answered with the question left.
    const decided = textOf(await ask(here, 'b1', `/approve ${first!.id}`));
    expect(decided).toContain(`Approved by alice: calculator (${first!.id}).`);
    expect(decided).toContain(`/approve ${second!.id}`);
    expect(decided).not.toContain(`/approve ${first!.id}`);
    expect(textOf(await ask(here, 'b1', `/approve ${second!.id}`))).toBe('computed 42');
  });

  it('streams both questions of a round', async () => {
    const stream = await clientOf(stack.gateway).chat.completions.create({ model: 'chatgate', messages: [{ role: 'user', content: 'twice: compute both' }], stream: true }, inSession('b2'));
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    const records = await approvalsOf('b2', (all) => all.length === 2);
    for (const record of records) expect(text).toContain(`/approve ${record.id}`);
  });
});

async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5));
}
