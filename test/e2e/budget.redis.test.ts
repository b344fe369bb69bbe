import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createBudgetLedger } from '../../src/budget/ledger.js';
import { loadConfig } from '../../src/config.js';
import { budgetKeys, sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import type { Stack } from '../helpers/stack.js';
import { startTelegramStack } from '../helpers/telegram-stack.js';
import { waitUntil } from '../helpers/waits.js';

let telegram: FakeTelegramServer;
let stack: Stack;

afterEach(async () => {
  await stack.close();
  await telegram.close();
});

const BUDGET = /^You have used today's budget of \$0\.01\. It resets at 00:00 UTC, in (\d+ h )?\d+ min\.$|^You have used today's budget of \$0\.01\. It resets at 00:00 UTC, in \d+ h\.$/;

/**
 * A stack whose model costs $10 per 1M tokens; each answer reports 1,100 tokens ($0.011), more
 * than its worst case (the prompt as counted + 300 output tokens, about $0.008), so one answer
 * uses $0.01 up.
 */
async function start(gatewayLimit: boolean, limits: Record<string, string> = { CHATGATE_BUDGET_USER_DAILY_USD: '0.01' }): Promise<Stack> {
  const prices = join(mkdtempSync(join(tmpdir(), 'cg-budget-')), 'prices.json');
  writeFileSync(prices, JSON.stringify({ 'fake-model': { input: 10, output: 10 } }));
  const env = { ...limits, CHATGATE_PRICES: prices, CHATGATE_RESERVED_OUTPUT_TOKENS: '300' };
  const config = loadConfig(env);
  telegram = await startFakeTelegram();
  stack = await startTelegramStack(telegram, {
    env: gatewayLimit ? env : { CHATGATE_PRICES: prices, CHATGATE_RESERVED_OUTPUT_TOKENS: '300' },
    handler: (request) => ({ content: `Answer ${request.index}`, usage: { prompt_tokens: 1000, completion_tokens: 100 } }),
    worker: { budgets: config.budgets, prices: config.llm.prices },
  });
  return stack;
}

/** The user texts that entered the session (a message answered by the gateway never does). */
async function userTexts(): Promise<string[]> {
  const transcript = await readTranscript(stack.t.redis, sessionKeys('telegram:42', stack.t.keyPrefix));
  return transcript.flatMap((e) => (e.type === 'message' && e.message.role === 'user' ? [JSON.stringify(e.message.content)] : []));
}

const texts = () => telegram.callsOf('sendMessage').map((c) => String(c.params.text));

async function say(from: number, text: string): Promise<string> {
  return (await sayAndRead(from, text, 1))[0]!;
}

/** Sends `text` and waits for the first `count` messages sent after it. */
async function sayAndRead(from: number, text: string, count: number): Promise<string[]> {
  const before = texts().length;
  telegram.pushMessage({ text, from: { id: from, is_bot: false, first_name: 'U' }, chat: { id: from, type: 'private' } });
  await waitUntil(telegram, 'call', () => texts().length >= before + count);
  return texts().slice(before, before + count);
}

describe('budgets (CHATGATE_BUDGET_USER_DAILY_USD=0.01, a priced model)', () => {
  it('the answer that uses the limit up is followed by one line saying so; after it the gateway answers at once; another user is served', async () => {
    await start(true);
    expect(await sayAndRead(42, 'hello', 2)).toEqual(['Answer 0', expect.stringMatching(BUDGET)]);
    expect(await say(42, 'and again')).toMatch(BUDGET);
    await stack.gateway.ingest.idle();
    expect(stack.llm.requests).toHaveLength(1);
    expect((await userTexts()).join()).not.toContain('and again'); // no turn: the gateway answered
    expect(await say(43, 'hi, I am someone else')).toBe('Answer 1');
    expect(stack.llm.requests).toHaveLength(2);
  });

  it('a marker this version cannot read lets the message through: the worker\'s reserve decides', async () => {
    await start(true);
    await stack.t.redis.set(budgetKeys(stack.t.keyPrefix).exhausted('user', 'telegram:42'), JSON.stringify({ v: 9, level: 'user' }), 'PX', 600_000);
    expect(await sayAndRead(42, 'hello', 2)).toEqual(['Answer 0', expect.stringMatching(BUDGET)]);
    expect(stack.llm.requests).toHaveLength(1);
  });

  it('a turn that hits the limit in the worker ends with one clear message, without a model call', async () => {
    await start(false);
    expect(await sayAndRead(42, 'hello', 2)).toEqual(['Answer 0', expect.stringMatching(BUDGET)]);
    expect(await say(42, 'and again')).toMatch(BUDGET);
    expect(stack.llm.requests).toHaveLength(1);
    expect((await userTexts()).join()).toContain('and again'); // the turn ran and ended with the message
  });

  it('/usage shows what is left of each limit that applies: the user\'s, the chat\'s, the deployment\'s', async () => {
    await start(true, { CHATGATE_BUDGET_USER_DAILY_USD: '0.05', CHATGATE_BUDGET_CHAT_MONTHLY_TOKENS: '100000', CHATGATE_BUDGET_DEPLOYMENT_DAILY_USD: '10' });
    expect(await say(42, 'hello')).toBe('Answer 0');
    const usage = (await say(42, '/usage')).split('\n');
    const left = usage.slice(usage.indexOf('<b>Budgets left</b>') + 1);
    expect(left).toEqual([
      expect.stringMatching(/^• You, today: \$0\.011 of \$0\.05 used, \$0\.039 left; resets at 00:00 UTC, in (\d+ h )?\d+ min$|^• You, today: \$0\.011 of \$0\.05 used, \$0\.039 left; resets at 00:00 UTC, in \d+ h$/),
      expect.stringMatching(/^• This chat, this month: 1,100 of 100,000 tokens used, 98,900 tokens left; resets at 00:00 UTC, in \d+ d/),
      expect.stringMatching(/^• This bot, today: \$0\.011 of \$10\.00 used, \$9\.99 left; resets at 00:00 UTC, in /),
    ]);
    expect(stack.llm.requests).toHaveLength(1);
  });

  it('/usage of a user who is blocked says so and when it resets, never what is "left"', async () => {
    await start(true, { CHATGATE_BUDGET_USER_DAILY_USD: '0.015' });
    expect(await say(42, 'hello')).toBe('Answer 0');
    // $0.011 used: the next answer's worst case (about $0.008) does not fit in the $0.004 left.
    expect(await say(42, 'and again')).toMatch(/^You have nearly used today's budget of \$0\.015: \$0\.004 is left, not enough for another answer\./);
    expect(await say(42, 'once more')).toMatch(/^You have nearly used/); // the gateway's early answer: its copy holds the marker
    const usage = (await say(42, '/usage')).split('\n');
    expect(usage.slice(usage.indexOf('<b>Budgets left</b>') + 1)).toEqual([
      expect.stringMatching(/^• You, today: \$0\.011 of \$0\.015 used; blocked, not enough left for another answer; resets at 00:00 UTC, in /),
    ]);
  });

  it('the gateway\'s /compact reserves and settles its summary for the sender and the chat', async () => {
    await start(true, { CHATGATE_BUDGET_USER_DAILY_TOKENS: '1000000', CHATGATE_BUDGET_CHAT_DAILY_TOKENS: '1000000' });
    for (let i = 0; i < 8; i++) await say(42, `question ${i}: ${'and some detail about it '.repeat(30)}`);
    expect(await say(42, '/compact')).toMatch(/^Compacted: [\d,]+ → [\d,]+ tokens\./);
    const summaries = stack.llm.requests.length - stack.agentRequests().length;
    expect(summaries).toBe(1);
    const settings = loadConfig({ CHATGATE_BUDGET_USER_DAILY_TOKENS: '1000000', CHATGATE_BUDGET_CHAT_DAILY_TOKENS: '1000000' }).budgets;
    const state = await createBudgetLedger(stack.t.redis, { keyPrefix: stack.t.keyPrefix, settings }).state({ user: 'telegram:42', chat: 'telegram:42' });
    // The 8 answers reported 1,100 tokens each; the summary counts on top, for the same three levels.
    const [user, chat, deployment] = state.filter((c) => c.period === 'day').map((c) => c.usedTokens);
    expect(user).toBeGreaterThan(8 * 1100);
    expect([chat, deployment]).toEqual([user, user]);
  });
});
