/**
 * The dashboard's first screen in headless Chromium against a real `chatgate start --demo`: the
 * status `chatgate status` prints (checks, the worker alive, the channels), then the sessions; on a
 * phone the context fill column stays in view; a session's view lists the tool calls of its turns.
 * bull-board (`/admin/queues`) loads nothing from another origin.
 */
import { type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { startDemo, type Demo } from '../helpers/cli-process.js';

describe('the dashboard\'s first screen (Chromium, demo process)', () => {
  let demo: Demo | undefined;
  let browser: Browser | undefined;
  let origin: string;

  beforeAll(async () => {
    demo = await startDemo({ CHATGATE_DEMO_WORD_DELAY_MS: '0' });
    ({ origin } = demo);
    // One session, so the sessions table has a row.
    const posted = await fetch(`${origin}/api/chat/dash/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'hello', clientMessageId: 'm1' }) });
    expect(posted.status).toBe(202);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await demo?.stop();
  });

  it('shows the status checks, the workers and the channels above the sessions', async () => {
    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${origin}/dashboard`);
    await page.locator('#status-panel:not([hidden]) tr[data-check="workers"]').waitFor();
    const names = await page.locator('#status-body tr').evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.check));
    expect(names).toEqual(expect.arrayContaining(['gateway', 'workers', 'channels', 'llm', 'queues', 'failed', 'sessions']));
    expect(await page.locator('tr[data-check="workers"]').textContent()).toContain('1 alive');
    expect(await page.locator('tr[data-check="channels"]').textContent()).toContain('web');
    expect(await page.locator('#processes-body tr[data-role="worker"]').first().textContent()).toContain('alive');
    expect(await page.locator('#processes-body tr[data-role="gateway"]').count()).toBeGreaterThan(0);
    // The status comes first, the sessions below it.
    const top = (selector: string) => page.locator(selector).evaluate((el) => el.getBoundingClientRect().top);
    expect(await top('#status-panel')).toBeLessThan(await top('#sessions'));
    expect(await page.locator('#sessions th', { hasText: 'context fill' }).textContent()).toContain('of usable window');
    await page.close();
  });

  it('keeps the context fill column in view on a phone (390 px)', async () => {
    const page = await browser!.newPage({ viewport: { width: 390, height: 800 } });
    await page.goto(`${origin}/dashboard`);
    const fill = page.locator('tr[data-session="web:dash"] td.fill');
    await fill.waitFor();
    const box = await fill.boundingBox();
    expect(box).not.toBeNull();
    expect(box!.x + box!.width).toBeLessThanOrEqual(390);
    expect(await fill.textContent()).toMatch(/%$/);
    await page.close();
  });

  it('shows the tool calls of a turn in the session view, read from the transcript', async () => {
    const posted = await fetch(`${origin}/api/chat/tools/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'what time is it?', clientMessageId: 'm2' }) });
    expect(posted.status).toBe(202);
    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${origin}/dashboard#session=${encodeURIComponent('web:tools')}`);
    const row = page.locator('#tool-calls tbody tr[data-tool="current_time"]');
    await row.waitFor({ timeout: 60_000 });
    const cells = await row.locator('td').allTextContents();
    expect(cells[0]).toBe('1');
    expect(cells[3]).toBe('{}');
    expect(cells[4]).toMatch(/\d{4}-\d{2}-\d{2}/);
    await page.close();
  });

  it('bull-board loads nothing from another origin', async () => {
    const html = await (await fetch(`${origin}/admin/queues`)).text();
    const external = [...html.matchAll(/\b(?:href|src)="((?:https?:)?\/\/[^"]*)"/g)].map((m) => m[1]);
    expect(external).toEqual([]);
    const page = await browser!.newPage();
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    await page.goto(`${origin}/admin/queues`);
    await page.locator('#root').waitFor();
    await page.waitForLoadState('networkidle');
    expect(requested.length).toBeGreaterThan(1);
    expect(requested.filter((url) => !url.startsWith(origin) && !url.startsWith('data:'))).toEqual([]);
    await page.close();
  });
});
