import { mkdirSync } from 'node:fs';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMonitorApp, MemorySessionView } from '../../src/monitor/index.js';
import { serveApp, type ServedApp } from '../helpers/http.js';
import { seededSession, seededSessions } from '../helpers/monitor-seed.js';

const SCREENSHOT = 'test-output/dashboard.png';
const TOKEN = 'dashboard-token-0123456789';

describe('dashboard in headless Chromium', () => {
  const reader = new MemorySessionView(seededSessions());
  let served: ServedApp;
  let base: string;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    // Bound off loopback with a token: the page must carry the token to its API calls.
    const app = createMonitorApp({ sessions: reader }, { host: '0.0.0.0', monitorToken: TOKEN, dashboardPollMs: 250 });
    served = await serveApp(app, '0.0.0.0');
    ({ base } = served);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 1100 } });
  });

  afterAll(async () => {
    await browser?.close();
    await served?.close();
  });

  it('lists the seeded sessions', async () => {
    await page.goto(`${base}/dashboard?token=${TOKEN}`);
    // ?token= is a one-time login: redirected without it, the page runs on an HttpOnly cookie.
    expect(page.url()).not.toContain('token=');
    expect(await page.context().cookies()).toEqual([expect.objectContaining({ name: 'cg_monitor', httpOnly: true, sameSite: 'Strict' })]);
    const rows = page.locator('#sessions-body tr');
    await rows.first().waitFor();
    expect(await rows.evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.session))).toEqual(['discord:2002', 'telegram:1001', 'web:abc']);
    const telegram = page.locator('tr[data-session="telegram:1001"] td');
    expect(await telegram.allTextContents()).toEqual(['telegram:1001', 'telegram', '120', '17.8%', '128,000', expect.any(String), '10,500', '$0.457', '2', '2026-01-15 10:00:00']);
    // The usage overview is one click away, as the dashboard is from it.
    expect(await page.locator('header #overview-link').evaluate((a) => (a as HTMLAnchorElement).href)).toBe(`${base}/overview`);
  });

  it('re-sorts by context fill', async () => {
    await page.selectOption('#sort', 'fill');
    await page.locator('#sessions-body tr').first().and(page.locator('[data-session="web:abc"]')).waitFor();
    expect(await page.locator('#sessions-body tr').evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.session))).toEqual(['web:abc', 'telegram:1001', 'discord:2002']);
  });

  it('opens a session: the fill chart shows both trigger lines and the compaction markers, and the ledger', async () => {
    await page.click('tr[data-session="telegram:1001"]');
    const markers = page.locator('#fill-chart .compaction-marker');
    await markers.first().waitFor();
    expect(await markers.count()).toBe(2);
    expect(await markers.evaluateAll((gs) => gs.map((g) => g.querySelector('title')?.textContent))).toEqual([
      'in-loop compacted: request 66,000 → 19,800 tokens (turn 16)',
      'in-loop compacted: request 75,800 → 22,740 tokens (turn 30)',
    ]);
    expect(await page.locator('#fill-chart .threshold-compress').count()).toBe(1);
    expect(await page.locator('#fill-chart .threshold-hygiene').count()).toBe(1);
    expect(await page.locator('#fill-chart').textContent()).toContain('compress 50%');
    expect(await page.locator('#fill-chart').textContent()).toContain('hygiene 85%');
    const points = await page.locator('#fill-chart .fill-line').getAttribute('points');
    expect(points?.split(' ')).toHaveLength(30);
    expect(await page.locator('#ledger').textContent()).toContain('$0.457');
    expect(await page.locator('#pinned li').allTextContents()).toEqual(['ORD-48213-XK', '#4471']);
    expect(await page.locator('#compaction-timeline tbody tr').count()).toBe(2);
    expect(page.url()).toContain('#session=telegram%3A1001');
    mkdirSync('test-output', { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  it('updates live when a session changes', async () => {
    reader.put(seededSession('telegram:1001', { turns: 40, perTurn: 4_000, compactAt: [16, 30, 38], lastActivityAt: Date.UTC(2026, 0, 15, 12) }));
    await page.locator('#fill-chart .compaction-marker').nth(2).waitFor();
    expect(await page.locator('#fill-chart .compaction-marker').count()).toBe(3);
    reader.put(seededSession('web:new', { turns: 1, perTurn: 500, compactAt: [] }));
    await page.locator('tr[data-session="web:new"]').waitFor();
  });

  it('draws no-ops and resets apart from compactions, with a legend', async () => {
    const detail = seededSession('web:mixed', { turns: 6, perTurn: 3_000, compactAt: [4] });
    detail.compactions.push({ ...detail.compactions[0], call: 5, outcome: 'noop', tokensAfter: detail.compactions[0].tokensBefore });
    detail.resets.push({ call: 5, turn: 6, at: detail.compactions[0].at + 1, removedMessages: 9 });
    reader.put(detail);
    await page.locator('tr[data-session="web:mixed"]').click();
    await page.locator('#fill-chart .compaction-noop').waitFor();
    expect(await page.locator('#fill-chart .compaction-marker').count()).toBe(1);
    expect(await page.locator('#fill-chart .reset-marker').count()).toBe(1);
    expect(await page.locator('#fill-chart .next-point').count()).toBe(1);
    expect(await page.locator('#chart-legend').textContent()).toContain('no-op');
    expect(await page.locator('#compaction-timeline tbody tr.reset').textContent()).toContain('9 messages left');
  });

  it('fits a 375 px phone screen, in the dark theme too', async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      const phone = await browser.newPage({ viewport: { width: 375, height: 800 }, colorScheme });
      await phone.goto(`${base}/dashboard?token=${TOKEN}#session=telegram%3A1001`);
      await phone.locator('#fill-chart .compaction-marker').first().waitFor();
      expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
      // Read in one task: the page re-renders the chart on every poll, so a held element may be detached.
      const chartWidth = await phone.evaluate(() => document.querySelector('#fill-chart')!.getBoundingClientRect().width);
      expect(chartWidth).toBeLessThanOrEqual(375);
      expect(chartWidth).toBeGreaterThan(250);
      const background = await phone.evaluate(() => getComputedStyle(document.body).backgroundColor);
      expect(background).toBe(colorScheme === 'dark' ? 'rgb(21, 24, 28)' : 'rgb(246, 247, 249)');
      if (colorScheme === 'light') await phone.screenshot({ path: 'test-output/dashboard-phone.png', fullPage: true });
      await phone.close();
    }
  });
});
