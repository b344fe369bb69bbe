/**
 * The dashboard in headless Chromium: a session's view lists the tool calls of its turns (tool,
 * arguments, result, grouped by turn), and the first screen names a dead worker's turns as being
 * recovered, one row per turn.
 */
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMonitorApp, MemorySessionView, type StatusPanel } from '../../src/monitor/index.js';
import { launchChromium } from '../helpers/browser.js';
import { serveApp, type ServedApp } from '../helpers/http.js';
import { seededSession } from '../helpers/monitor-seed.js';

const T0 = Date.UTC(2026, 0, 15, 9, 0, 0);
const DEAD = 'box:200:bbbbbb';

describe('dashboard: tool calls and dead workers\' turns (Chromium)', () => {
  const reader = new MemorySessionView([
    {
      ...seededSession('web:tools', { turns: 3, perTurn: 300, compactAt: [] }),
      toolCalls: [
        { turn: 1, callId: 'c1', tool: 'current_time', args: '{}', result: '2026-01-15T09:01:00Z', atMs: T0 + 60_000 },
        { turn: 2, callId: 'c2', tool: 'calculator', args: '{"expression":"6*7"}', result: '42', atMs: T0 + 120_000 },
        { turn: 2, callId: 'c3', tool: 'remember', args: '{"key":"order","text":"ORD-48213-XK"}', result: null, atMs: T0 + 121_000 },
      ],
    },
    seededSession('web:quiet', { turns: 1, perTurn: 300, compactAt: [] }),
  ]);
  const status: StatusPanel = {
    ok: true,
    checks: [{ name: 'workers', status: 'warn', detail: '1 alive; dead: box pid 200 (1 active turn of it being recovered)' }],
    processes: [
      { role: 'worker', id: 'box:100:aaaaaa', host: 'box', pid: 100, alive: true, beatAt: T0, startedAt: T0, version: '0.1.0' },
      { role: 'worker', id: DEAD, host: 'box', pid: 200, alive: false, beatAt: T0, startedAt: T0, version: '0.1.0' },
    ],
    deadWorkerTurns: [{ worker: DEAD, turns: 2, sessions: ['telegram:7', 'web:tools'] }],
  };
  let served: ServedApp;
  let base: string;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    const app = createMonitorApp({ sessions: reader, status: async () => status }, { dashboardPollMs: 250 });
    served = await serveApp(app);
    ({ base } = served);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  });

  afterAll(async () => {
    await browser?.close();
    await served?.close();
  });

  it('names a dead worker\'s turns as being recovered, on the worker\'s row and one row per turn', async () => {
    await page.goto(`${base}/dashboard`);
    await page.locator('#dead-turns:not([hidden]) #dead-turns-body tr').first().waitFor();
    expect(await page.locator('#processes-body tr.dead').textContent()).toContain('dead: 2 turns being recovered');
    expect(await page.locator('#processes-body tr.alive').textContent()).not.toContain('recovered');
    const rows = page.locator('#dead-turns-body tr');
    expect(await rows.evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent)))).toEqual([
      ['telegram:7', 'box pid 200', 'its worker died: a live worker is recovering the turn'],
      ['web:tools', 'box pid 200', 'its worker died: a live worker is recovering the turn'],
    ]);
  });

  it('shows the tool calls of each turn in the session view', async () => {
    await page.locator('#sessions-body tr[data-session="web:tools"]').click();
    const rows = page.locator('#tool-calls tbody tr');
    await rows.first().waitFor();
    expect(await rows.evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent)))).toEqual([
      ['1', '2026-01-15 09:01:00', 'current_time', '{}', '2026-01-15T09:01:00Z'],
      ['2', '2026-01-15 09:02:00', 'calculator', '{"expression":"6*7"}', '42'],
      ['', '2026-01-15 09:02:01', 'remember', '{"key":"order","text":"ORD-48213-XK"}', '(no result yet)'],
    ]);
    await page.locator('#sessions-body tr[data-session="web:quiet"]').click();
    await page.locator('#tool-calls', { hasText: 'No tool calls in the recent turns.' }).waitFor();
  });
});
