/**
 * The usage overview in headless Chromium against a real `chatgate start` (a fake endpoint serving
 * the priced gpt-4o-mini) with a user budget: the page, `chatgate usage --by user --json` and `GET /api/usage` show
 * the same totals (one read model), on a desktop and on a 390 px phone; the budgets fullest first,
 * with a user over a limit who is not among the top 5 by cost.
 */
import { mkdirSync } from 'node:fs';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totalTokens } from '../../src/usage/figures.js';
import { formatMoney } from '../../src/core/money.js';
import { budgetKeys } from '../../src/redis/keys.js';
import type { UsageOverview } from '../../src/usage/overview.js';
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
    // Seven users with two calls each, bob and gina with one: gina is not among the top 5 by cost.
    // Two rounds: a message sent while its chat is busy joins the turn under way.
    const post = async (chat: string, text: string) => {
      const posted = await fetch(`${origin}/api/chat/${chat}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, clientMessageId: `${chat}-${text}` }) });
      expect(posted.status).toBe(202);
    };
    const calls = async () => (await api('/api/usage?since=1d&by=chat')).totals.calls;
    const twice = ['alice', 'carol', 'dave', 'erin', 'frank', 'hank', 'ivan'];
    for (const chat of [...twice, 'bob', 'gina']) await post(chat, 'hello');
    await pollUntil(async () => (await calls()) >= 9, { timeoutMs: 60_000 });
    for (const chat of twice) await post(chat, 'and the time?');
    await pollUntil(async () => (await calls()) >= 16, { timeoutMs: 60_000 });
    // Over her limit after the fact: 1,280 tokens used of 1,000.
    const set = await runChatgate(['budgets', 'set', 'user', 'web:gina', '--daily-tokens', '1000'], env);
    expect(set.code, set.stderr).toBe(0);
    // Her next message is refused (the worker's reserve): a marker holds, and the overview shows her blocked.
    await post('gina', 'and more?');
    await pollUntil(async () => ((await api('/api/usage/overview')) as unknown as UsageOverview).budgets.rows.some((r) => r.subject === 'web:gina' && r.blocked === 'used up'), { timeoutMs: 60_000 });
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stopChatgate(proc);
    await front?.close();
    await llm?.close();
    await t?.cleanup();
  });

  async function shoot(page: Page, name: string): Promise<void> {
    mkdirSync('test-output', { recursive: true });
    await page.screenshot({ path: `test-output/${name}.png`, fullPage: true });
  }

  async function openOverview(width: number): Promise<Page> {
    const page = await browser!.newPage({ viewport: { width, height: 900 }, colorScheme: 'light' });
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
    expect(fromCli.groups.map((g) => g.key).sort()).toEqual(['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'gina', 'hank', 'ivan'].map((u) => `web:${u}`));

    const page = await openOverview(1280);
    expect(await page.locator('#week .money').textContent()).toBe(formatMoney(fromCli.totals.costUsd, fromCli.totals.unpricedCalls));
    expect(Number(await page.locator('#week [data-tokens]').getAttribute('data-tokens'))).toBe(totalTokens(fromCli.totals));
    // Everything happened today: today, 7 and 30 days agree.
    expect(await page.locator('#today .money').textContent()).toBe(await page.locator('#week .money').textContent());
    expect(await page.locator('#month .money').textContent()).toBe(await page.locator('#week .money').textContent());
    expect(await page.locator('#top-users tbody td:first-child').allTextContents()).toEqual(fromCli.groups.slice(0, 5).map((g) => g.key));
    expect(await page.locator('#top-models tbody td:first-child').allTextContents()).toEqual(['gpt-4o-mini']);
    expect(await page.locator('#usage-chart rect.cost-bar').count()).toBe(30);
    expect(await page.locator('#budgets').textContent()).toMatch(/user web:alice, per day.*of \$5\.00/);
    // Fullest first: gina, over her limit though not a top user, in red; the rest below, and how many are left out.
    const rows = page.locator('#budgets tbody tr');
    const shares = await rows.evaluateAll((trs) => trs.map((tr) => Number((tr as HTMLElement).dataset.share)));
    expect(shares).toEqual([...shares].sort((a, b) => b - a));
    expect(await page.locator('#top-users').textContent()).not.toContain('web:gina');
    const gina = rows.first();
    expect(await gina.locator('td').first().textContent()).toBe('user web:gina, per day');
    expect(await gina.textContent()).toMatch(/1,280 of 1,000 tokens.*128%/);
    expect(await gina.getAttribute('data-blocked')).toBe('used up');
    expect(await gina.locator('td').nth(1).textContent()).toBe('1,280 of 1,000 tokensblocked: used up');
    expect(await rows.nth(1).textContent()).toMatch(/\$0\.000426 of \$5\.00<1%$/);
    expect(await gina.getAttribute('class')).toBe('full');
    expect(await gina.locator('.bar').getAttribute('data-state')).toBe('over');
    expect(await gina.locator('.bar i').evaluate((i) => getComputedStyle(i).backgroundColor)).toBe('rgb(180, 35, 24)');
    expect(await rows.nth(1).locator('.bar').getAttribute('data-state')).toBe('ok');
    expect(await page.locator('#budgets-more').textContent()).toMatch(/^1 more with a limit.*chatgate budgets list/);
    // No error: no blank band where its paragraph would be.
    expect(await page.locator('#error').evaluate((p) => getComputedStyle(p).display)).toBe('none');
    await shoot(page, 'overview-1280');
    expect(await page.locator('#compaction-sentence').textContent()).toMatch(/compaction/i);
    // The sessions dashboard stays one click away.
    await page.locator('#sessions-link').click();
    await page.waitForURL(/\/dashboard/);
    await page.close();
  });

  it('lists every budget beside a marker it cannot read, and names it with the reset that drops it', async () => {
    // Written by another chatgate version: the overview must not fail on it.
    await t.redis.set(budgetKeys(t.keyPrefix).exhausted('user', 'web:bob'), JSON.stringify({ v: 9 }), 'PX', 600_000);
    const response = await fetch(`${origin}/api/usage/overview`);
    expect(response.status).toBe(200);
    const overview = await response.json() as UsageOverview;
    const bob = overview.budgets.rows.find((r) => r.subject === 'web:bob')!;
    expect(bob.markerUnreadable).toMatch(/^marker unreadable \(format 9\): .*`chatgate budgets reset user web:bob` drops it now/);
    expect(overview.budgets.rows.find((r) => r.subject === 'web:gina')).toMatchObject({ blocked: 'used up' });
    const page = await openOverview(1280);
    const row = page.locator('#budgets tbody tr', { hasText: 'user web:bob' });
    expect(await row.getAttribute('data-marker')).toBe('unreadable');
    expect(await row.locator('td').nth(1).textContent()).toContain(bob.markerUnreadable!);
    await page.close();
    await t.redis.del(budgetKeys(t.keyPrefix).exhausted('user', 'web:bob'));
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
    // The chart's text is drawn in CSS pixels: as tall on the phone as its 12 px font.
    const labels = await page.locator('#usage-chart text').evaluateAll((ts) => {
      const box = (ts[0] as SVGTextElement).ownerSVGElement!.getBoundingClientRect();
      return ts.map((t) => ({ px: getComputedStyle(t).fontSize, rect: t.getBoundingClientRect(), box })).map(({ px, rect, box }) => ({ px, height: rect.height, inside: rect.left >= box.left && rect.right <= box.right }));
    });
    expect(labels.length).toBeGreaterThan(6);
    for (const label of labels) expect(label).toEqual({ px: '12px', height: expect.any(Number), inside: true });
    expect(Math.min(...labels.map((l) => l.height))).toBeGreaterThanOrEqual(12);
    expect(await page.locator('#error').evaluate((p) => getComputedStyle(p).display)).toBe('none');
    // Ids break after a ':' only, never inside a word.
    const id = page.locator('#top-users tbody td.id').first();
    expect(await id.getAttribute('title')).toBe(await id.textContent());
    await shoot(page, 'overview-390');
    await page.close();
  });
});
