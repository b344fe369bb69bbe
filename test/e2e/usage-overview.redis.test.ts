/**
 * The usage overview in headless Chromium against a real `chatgate start` (a fake endpoint serving
 * the priced gpt-4o-mini) with a user budget: the page, `chatgate usage --by user --json` and `GET /api/usage` show
 * the same totals (one read model), on a desktop and on a 390 px phone.
 */
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatMoney, totalTokens } from '../../src/usage/figures.js';
import type { UsageReport } from '../../src/usage/read-model.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { launchChromium } from '../helpers/browser.js';
import { startModelsFront } from '../helpers/cli-worker.js';
import { runChatgate, spawnChatgate, stopChatgate, type ChatgateProcess } from '../helpers/cli-process.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { pollUntil } from '../helpers/waits.js';

describe('the usage overview (Chromium, a chatgate process)', () => {
  let t: TestRedis;
  let proc: ChatgateProcess | undefined;
  let browser: Browser | undefined;
  let origin: string;
  let overviewUrl: string;
  let env: Record<string, string>;
  let llm: FakeOpenAI | undefined;
  let front: { baseURL: string; close(): Promise<void> } | undefined;

  const api = async (path: string) => (await fetch(`${origin}${path}`)).json() as Promise<UsageReport>;

  beforeAll(async () => {
    t = createTestRedis();
    llm = await startFakeOpenAI(() => ({ content: 'noted', usage: { prompt_tokens: 1200, completion_tokens: 80, cached_tokens: 200 } }));
    front = await startModelsFront(llm.baseURL);
    env = {
      ...t.env, OPENAI_BASE_URL: front.baseURL, OPENAI_API_KEY: 'test-key', CHATGATE_MODEL: 'gpt-4o-mini', CHATGATE_CONTEXT_WINDOW: '16000', CHATGATE_BUDGET_USER_DAILY_USD: '5',
    };
    proc = spawnChatgate(['start'], { ...env, CHATGATE_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'warn' });
    ({ origin } = await proc.ready());
    // The banner names the overview first of the operator's pages.
    overviewUrl = (await proc.waitFor('stderr', /^Usage: +(http:\/\/\S+\/overview)$/m))[1]!;
    for (const [chat, text] of [['alice', 'hello'], ['bob', 'what is 2+2?'], ['alice', 'and the time?']]) {
      const posted = await fetch(`${origin}/api/chat/${chat}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, clientMessageId: `${chat}-${text}` }) });
      expect(posted.status).toBe(202);
    }
    await pollUntil(async () => (await api('/api/usage?since=1d&by=chat')).groups.length === 2 && (await api('/api/usage?since=1d&by=chat')).totals.calls >= 3, { timeoutMs: 60_000 });
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stopChatgate(proc);
    await front?.close();
    await llm?.close();
    await t?.cleanup();
  });

  async function openOverview(width: number): Promise<Page> {
    const page = await browser!.newPage({ viewport: { width, height: 900 } });
    await page.goto(overviewUrl);
    await page.locator('body[data-ready="1"] #week .money').waitFor();
    return page;
  }

  it('shows the totals chatgate usage --by user --json and /api/usage show', async () => {
    const cli = await runChatgate(['usage', '--by', 'user', '--json'], env);
    expect(cli.code, cli.stderr).toBe(0);
    const fromCli = JSON.parse(cli.stdout) as UsageReport;
    const fromApi = await api('/api/usage?since=7d&by=user');
    expect(fromApi.totals).toEqual(fromCli.totals);
    expect(fromApi.groups).toEqual(fromCli.groups);
    expect(fromCli.totals.costUsd).toBeGreaterThan(0);
    expect(fromCli.groups.map((g) => g.key).sort()).toEqual(['web:alice', 'web:bob']);

    const page = await openOverview(1280);
    expect(await page.locator('#week .money').textContent()).toBe(formatMoney(fromCli.totals.costUsd, fromCli.totals.unpricedCalls));
    expect(Number(await page.locator('#week [data-tokens]').getAttribute('data-tokens'))).toBe(totalTokens(fromCli.totals));
    // Everything happened today: today, 7 and 30 days agree.
    expect(await page.locator('#today .money').textContent()).toBe(await page.locator('#week .money').textContent());
    expect(await page.locator('#month .money').textContent()).toBe(await page.locator('#week .money').textContent());
    expect(await page.locator('#top-users tbody td:first-child').allTextContents()).toEqual(fromCli.groups.map((g) => g.key));
    expect(await page.locator('#top-models tbody td:first-child').allTextContents()).toEqual(['gpt-4o-mini']);
    expect(await page.locator('#usage-chart rect.cost-bar').count()).toBe(30);
    expect(await page.locator('#budgets').textContent()).toMatch(/user web:alice, per day.*of \$5\.00/);
    expect(await page.locator('#compaction-sentence').textContent()).toMatch(/compaction/i);
    // The sessions dashboard stays one click away.
    await page.locator('#sessions-link').click();
    await page.waitForURL(/\/dashboard/);
    await page.close();
  });

  it('reads on a 390 px phone: one column, nothing wider than the screen', async () => {
    const page = await openOverview(390);
    const fromCli = JSON.parse((await runChatgate(['usage', '--by', 'user', '--json'], env)).stdout) as UsageReport;
    expect(await page.locator('#week .money').textContent()).toBe(formatMoney(fromCli.totals.costUsd, fromCli.totals.unpricedCalls));
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    const left = (selector: string) => page.locator(selector).evaluate((el) => el.getBoundingClientRect().left);
    expect(await left('#week')).toBe(await left('#today'));
    const chart = await page.locator('#usage-chart').evaluate((el) => el.getBoundingClientRect().width);
    expect(chart).toBeLessThanOrEqual(390);
    expect(chart).toBeGreaterThan(300);
    await page.close();
  });
});
