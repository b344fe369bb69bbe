import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { guardLlm } from '../../src/budget/guard.js';
import { createBudgetLedger } from '../../src/budget/ledger.js';
import { NO_BUDGETS, type BudgetSettings } from '../../src/core/budget.js';
import { BudgetError } from '../../src/errors.js';
import { createLlmClient } from '../../src/llm/client.js';
import { createSummarizer } from '../../src/llm/summarizer.js';
import { createSilentLogger } from '../../src/log.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const scope = { user: 'telegram:42', chat: 'telegram:42' };
const settings: BudgetSettings = { ...NO_BUDGETS, user: { day: { tokens: 1500 } } };

describe('budget guard', () => {
  let t: TestRedis;
  let fake: FakeOpenAI;
  beforeEach(async () => {
    t = createTestRedis();
    fake = await startFakeOpenAI(() => ({ content: 'Goal: a summary.', usage: { prompt_tokens: 1000, completion_tokens: 200 } }));
  });
  afterEach(async () => {
    await fake.close();
    await t.cleanup();
  });

  it('counts a summariser call for the turn that asked for it, and refuses the next once the limit is used', async () => {
    const ledger = createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings });
    const llm = guardLlm(createLlmClient({ baseURL: fake.baseURL, apiKey: 'k', model: 'fake-model', stream: false }), { ledger, logger: createSilentLogger() }, { settings, defaultMaxTokens: 100 });
    const summarizer = createSummarizer({ llm });
    const request = { turns: [{ role: 'user' as const, content: 'hello there' }], previousSummary: null, targetTokens: 100 };
    const notices: string[] = [];
    const inTurn = (onNotice: (text: string) => void) => ({ ...request, scope: { ...scope, turn: { usedMicro: 0, usedTokens: 0, onNotice } } });
    await summarizer.summarize(inTurn((text) => notices.push(text)));
    expect((await ledger.state(scope))[0]).toMatchObject({ usedTokens: 1200, limitTokens: 1500 });
    expect(notices).toEqual(["You have used 80% of today's budget of 1,500 tokens."]);
    const second = await summarizer.summarize(inTurn(() => undefined));
    expect(typeof second === 'string' ? second : second.text).toBe('Goal: a summary.');
    await expect(summarizer.summarize(inTurn(() => undefined))).rejects.toBeInstanceOf(BudgetError);
    expect(fake.requests).toHaveLength(2);
  });
});
