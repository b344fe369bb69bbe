import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMonitorApp, MemorySessionView } from '../../src/monitor/index.js';
import { serveApp, type ServedApp } from '../helpers/http.js';
import { seededSession } from '../helpers/monitor-seed.js';

const TOKEN = 'dashboard-token-0123456789';

describe('dashboard: failed messages of a session', () => {
  const reader = new MemorySessionView([
    { ...seededSession('telegram:1001', { turns: 4, perTurn: 300, compactAt: [] }), failed: 3 },
    { ...seededSession('web:abc', { turns: 2, perTurn: 300, compactAt: [] }), failed: 0 },
  ]);
  let served: ServedApp;
  let base: string;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    const app = createMonitorApp({ sessions: reader }, { host: '0.0.0.0', monitorToken: TOKEN, dashboardPollMs: 250 });
    served = await serveApp(app, '0.0.0.0');
    ({ base } = served);
    browser = await launchChromium();
    page = await browser.newPage();
    await page.goto(`${base}/dashboard?token=${TOKEN}`);
  });

  afterAll(async () => {
    await browser?.close();
    await served?.close();
  });

  it('shows the count and the commands when a session has failed messages, nothing otherwise', async () => {
    await page.click('tr[data-session="telegram:1001"]');
    const failed = page.locator('#failed');
    await failed.waitFor();
    expect(await failed.textContent()).toBe('3 failed messages (chatgate failed telegram:1001 lists them, chatgate retry telegram:1001 re-queues them)');
    await page.click('tr[data-session="web:abc"]');
    await page.locator('#detail h2', { hasText: 'web:abc' }).first().waitFor();
    expect(await page.locator('#failed').count()).toBe(0);
  });
});
