/**
 * A used-up budget on the web chat: the gateway refuses the message at once (429, `over_budget`,
 * the budget message), no turn is queued and no model is called; the page keeps the message with
 * that reason under it. The web chat answers refusals itself, so no notice may be the only answer.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBudgetLedger } from '../../src/budget/ledger.js';
import { loadConfig } from '../../src/config.js';
import { launchChromium, openChat, sendChat } from '../helpers/browser.js';
import { startStack, type Stack } from '../helpers/stack.js';

const BUDGET_TEXT = /^You have used today's budget of \$0\.01\. It resets at 00:00 UTC, in /;

describe('a used-up budget on the web chat', () => {
  let stack: Stack;
  let browser: Browser | undefined;

  beforeAll(async () => {
    // $10 per 1M tokens; each answer reports 1,100 tokens ($0.011): the first answer uses up $0.01.
    // Its worst case (the prompt as counted + 300 output tokens, about $0.008) fits, so it is made.
    const prices = join(mkdtempSync(join(tmpdir(), 'cg-budget-web-')), 'prices.json');
    writeFileSync(prices, JSON.stringify({ 'fake-model': { input: 10, output: 10 } }));
    const env = { CHATGATE_BUDGET_USER_DAILY_USD: '0.01', CHATGATE_PRICES: prices, CHATGATE_RESERVED_OUTPUT_TOKENS: '300' };
    const config = loadConfig(env);
    stack = await startStack({
      env,
      handler: (request) => ({ content: `Answer ${request.index}`, usage: { prompt_tokens: 1000, completion_tokens: 100 } }),
      worker: { budgets: config.budgets, prices: config.llm.prices },
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('answers a message over the limit with 429 and the budget message, queuing nothing', async () => {
    const post = (conversation: string, userId: string, text: string) => fetch(`${stack.gateway.httpUrl}/api/chat/${conversation}/messages`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userId, text }),
    });
    expect((await post('api-a', 'alice', 'hello')).status).toBe(202);
    await expect.poll(() => stack.agentRequests().length).toBe(1);
    // Its answer's settle used up alice's limit: the gateway's early answer reads that marker.
    const ledger = createBudgetLedger(stack.t.redis, { keyPrefix: stack.t.keyPrefix, settings: stack.config.budgets });
    await expect.poll(() => ledger.check({ user: 'web:alice' })).not.toBeNull();
    const refused = await post('api-a', 'alice', 'and again');
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ refused: 'over_budget', error: expect.stringMatching(BUDGET_TEXT) });
    // Another user is served.
    expect((await post('api-b', 'bob', 'hi')).status).toBe(202);
    await expect.poll(() => stack.agentRequests().length).toBe(2);
    await stack.gateway.ingest.idle();
    expect(stack.agentRequests().map((r) => JSON.stringify(r.messages.at(-1)))).not.toContain('and again');
  });

  it('answers /btw over the limit with the budget message, not a model failure', async () => {
    const post = (text: string) => fetch(`${stack.gateway.httpUrl}/api/chat/api-a/messages`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userId: 'alice', text }),
    });
    const calls = stack.llm.requests.length;
    expect((await post('/btw what was my first question?')).status).toBe(202);
    const replies = async () => ((await (await fetch(`${stack.gateway.httpUrl}/api/chat/api-a/messages?after=0&timeoutMs=0`)).json()) as { messages: Array<{ text: string }> }).messages.map((m) => m.text);
    await expect.poll(replies).toContainEqual(expect.stringMatching(BUDGET_TEXT));
    expect((await replies()).join('\n')).not.toContain('could not be answered');
    expect(stack.llm.requests.length - calls).toBe(0);
  });

  it('shows the reason under the message in the page and keeps its text', async () => {
    const page = await openChat(browser!, `${stack.gateway.httpUrl}/chat?c=page-a`);
    // The page's user is new: its first message is answered, and that answer uses up the limit.
    await sendChat(page, 'first question');
    await page.locator('.msg.bot:not(.live)', { hasText: /^Answer \d+$/ }).first().waitFor();
    const calls = stack.agentRequests().length;
    await sendChat(page, 'second question');
    const failed = page.locator('.msg.user.failed', { hasText: 'second question' });
    await failed.locator('.note .reason', { hasText: /^Not sent: You have used today's budget of \$0\.01\. It resets at 00:00 UTC, in / }).waitFor();
    await stack.gateway.ingest.idle();
    expect(stack.agentRequests()).toHaveLength(calls);
  });
});
