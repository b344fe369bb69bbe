import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { guardLlm } from '../../src/budget/guard.js';
import { createBudgetLedger } from '../../src/budget/ledger.js';
import { NO_BUDGETS, type BudgetSettings, type TurnSpend } from '../../src/core/budget.js';
import { BudgetError } from '../../src/errors.js';
import { createLlmClient } from '../../src/llm/client.js';
import { createSummarizer } from '../../src/llm/summarizer.js';
import { createSilentLogger } from '../../src/log.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { budgetKeys } from '../../src/redis/keys.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const scope = { user: 'telegram:42', chat: 'telegram:42' };
const settings: BudgetSettings = { ...NO_BUDGETS, user: { day: { tokens: 1500 } } };

describe('budget guard', () => {
  let t: TestRedis;
  let fake: FakeOpenAI;
  let usage = { prompt_tokens: 1000, completion_tokens: 200 };
  beforeEach(async () => {
    t = createTestRedis();
    usage = { prompt_tokens: 1000, completion_tokens: 200 };
    fake = await startFakeOpenAI(() => ({ content: 'Goal: a summary.', usage }));
  });
  afterEach(async () => {
    await fake.close();
    await t.cleanup();
  });

  it('counts a summariser call for the turn that asked for it, and refuses the next once its worst case does not fit', async () => {
    const ledger = createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings });
    const llm = guardLlm(createLlmClient({ baseURL: fake.baseURL, apiKey: 'k', model: 'fake-model', stream: false }), { ledger, logger: createSilentLogger() }, { settings, defaultMaxTokens: 100 });
    const summarizer = createSummarizer({ llm });
    const request = { turns: [{ role: 'user' as const, content: 'hello there' }], previousSummary: null, targetTokens: 100 };
    const notices: string[] = [];
    const inTurn = (onNotice: (text: string) => void) => ({ ...request, scope: { ...scope, turn: { usedMicro: 0, usedTokens: 0, onNotice } } });
    await summarizer.summarize(inTurn((text) => notices.push(text)));
    expect((await ledger.state(scope))[0]).toMatchObject({ usedTokens: 1200, limitTokens: 1500 });
    expect(notices).toEqual([expect.stringMatching(/^You have used 80% of today's budget of 1,500 tokens: 300 tokens are left\. It resets at 00:00 UTC, in /)]);
    // 300 tokens left cannot hold the next call's worst case: refused before it is made, saying so.
    await expect(summarizer.summarize(inTurn(() => undefined))).rejects.toThrow(/You have nearly used today's budget of 1,500 tokens: 300 tokens are left, not enough for another answer\./);
    expect(fake.requests).toHaveLength(1);
  });

  it.each([
    ['tokens', { tokens: 250 }, 200],
    ['USD', { usd: 0.0025 }, 200],
  ] as const)('a per-turn cap in %s admits a call only if its worst case fits: the turn never goes over', async (_unit, turnCap, spentTokens) => {
    usage = { prompt_tokens: 10, completion_tokens: 90 }; // 100 tokens ($0.001): within each call's worst case (prompt + 100)
    const capped: BudgetSettings = { ...NO_BUDGETS, turn: turnCap };
    const ledger = createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: capped });
    const llm = guardLlm(createLlmClient({ baseURL: fake.baseURL, apiKey: 'k', model: 'fake-model', stream: false }), { ledger, logger: createSilentLogger() }, { settings: capped, prices: { 'fake-model': { input: 10, output: 10 } }, defaultMaxTokens: 100 });
    const turn = { usedMicro: 0, usedTokens: 0, onNotice: () => undefined };
    const call = () => llm.complete({ messages: [{ role: 'user', content: 'hi' }], scope: { ...scope, turn } });
    await call();
    await call(); // used + worst case still fits in the cap
    const third = await call().then(() => null, (err: unknown) => err);
    expect(third).toBeInstanceOf(BudgetError);
    expect((third as BudgetError).notice).toMatch(/^This request was stopped before its next step: it could go over the limit of one turn \((250 tokens|\$0\.0025)\)\./);
    expect(turn.usedTokens).toBe(spentTokens);
    expect(fake.requests).toHaveLength(2);
  });

  it('the call that uses a limit up is answered, then one line says so (no notice first when it jumps past the share)', async () => {
    const tight: BudgetSettings = { ...NO_BUDGETS, user: { day: { tokens: 1150 } } };
    const ledger = createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: tight });
    const llm = guardLlm(createLlmClient({ baseURL: fake.baseURL, apiKey: 'k', model: 'fake-model', stream: false }), { ledger, logger: createSilentLogger() }, { settings: tight, defaultMaxTokens: 100 });
    const notices: string[] = [];
    const turn: TurnSpend = { usedMicro: 0, usedTokens: 0, onNotice: (text) => notices.push(text) };
    const result = await llm.complete({ messages: [{ role: 'user', content: 'hi' }], scope: { ...scope, turn } }); // reports 1,200 tokens: 0% → 104%
    expect(result.message.content).toBe('Goal: a summary.');
    // The answer comes before the settle; a turn waits for it before it commits.
    expect(turn.settling).toBeInstanceOf(Promise);
    await turn.settling;
    expect(notices).toEqual([expect.stringMatching(/^You have used today's budget of 1,150 tokens\. It resets at 00:00 UTC, in /)]);
    expect(await ledger.check(scope)).toMatchObject({ level: 'user', unit: 'tokens', limit: 1150 });
    // The turn's next call (a tool loop) is refused without saying it twice; another turn reads the full message.
    await expect(llm.complete({ messages: [{ role: 'user', content: 'hi' }], scope: { ...scope, turn } })).rejects.toMatchObject({ notice: 'This request stopped here: that budget is used up.' });
    await expect(llm.complete({ messages: [{ role: 'user', content: 'hi' }], scope })).rejects.toMatchObject({ notice: expect.stringMatching(/^You have used today's budget of 1,150 tokens\./) });
  });
});

describe('budget guard: calls in flight', () => {
  let t: TestRedis;
  let fake: FakeOpenAI;
  let release!: () => void;
  beforeEach(async () => {
    t = createTestRedis();
    const held = new Promise<void>((resolve) => { release = resolve; });
    fake = await startFakeOpenAI(async () => {
      await held;
      return { content: 'done', usage: { prompt_tokens: 100, completion_tokens: 100 } };
    });
  });
  afterEach(async () => {
    release();
    await fake.close();
    await t.cleanup();
  });

  it('a call refused only because the same user\'s calls are in flight says so, and leaves no marker', async () => {
    const ledger = createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings });
    const llm = guardLlm(createLlmClient({ baseURL: fake.baseURL, apiKey: 'k', model: 'fake-model', stream: false }), { ledger, logger: createSilentLogger() }, { settings, defaultMaxTokens: 1000 });
    const call = () => llm.complete({ messages: [{ role: 'user', content: 'hi' }], promptTokens: 100, scope });
    const first = call();
    // Nothing used yet, 1,100 of 1,500 tokens held by the first call: the second's 1,100 fit only once it is done.
    await expect(call()).rejects.toThrow("Your other requests are still being answered and may use the rest of today's budget of 1,500 tokens. Try again in a moment.");
    expect(await ledger.check(scope)).toBeNull();
    expect(await t.redis.exists(budgetKeys(t.keyPrefix).exhausted('user', scope.user))).toBe(0);
    release();
    await first;
    expect((await ledger.state(scope))[0]).toMatchObject({ usedTokens: 200 });
  });
});
