/**
 * The dashboard's Channels panel in headless Chromium, fed by a gateway heartbeat in real Redis
 * through the same reader and verdict as `chatgate status` (readChannelsPanel): a disconnected
 * channel shows DOWN with its reason and fix, and the panel follows the next beat back to up. A
 * monitor without channels (a worker's) shows no panel.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChannelsPanel } from '../../src/gateway/channel-health.js';
import { createMonitorApp, MemorySessionView } from '../../src/monitor/index.js';
import { writeHeartbeat, type GatewayBeat, type HeartbeatRecord } from '../../src/redis/heartbeats.js';
import { launchChromium } from '../helpers/browser.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

describe('dashboard: Channels panel', () => {
  let t: TestRedis;
  const servers: ServerType[] = [];
  let browser: Browser;

  const beat = (gateway: GatewayBeat): HeartbeatRecord => ({
    role: 'gateway', id: 'gw-host:4242:abc', host: 'gw-host', pid: 4242, startedAt: Date.now() - 60_000, version: '1.0.0', beatAt: Date.now(), ttlMs: 60_000, budgetDigest: 'off', gateway,
  });
  async function serveMonitor(channels: boolean): Promise<string> {
    const app = createMonitorApp({ sessions: new MemorySessionView([]), ...(channels ? { channels: () => readChannelsPanel(t.redis, t.keyPrefix) } : {}) }, { dashboardPollMs: 250 });
    const server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    servers.push(server);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  beforeAll(async () => {
    t = createTestRedis();
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    for (const server of servers) {
      const closed = new Promise((resolve) => server.close(resolve));
      (server as Server).closeAllConnections();
      await closed;
    }
    await t.cleanup();
  });

  it('shows a disconnected channel as DOWN with the reason and the fix, then up after the next beat', async () => {
    await writeHeartbeat(t.redis, beat({
      httpUrl: 'http://127.0.0.1:8787',
      channels: { telegram: { state: 'disconnected', reason: 'getUpdates failed (502: Bad Gateway) (4 times in a row)', sinceMs: Date.now() - 30_000 }, web: { state: 'connected' } },
    }), t.keyPrefix);
    const page = await browser.newPage();
    await page.goto(`${await serveMonitor(true)}/dashboard`);
    const verdict = page.locator('#channels-verdict');
    await page.locator('#channels-body tr').first().waitFor();
    expect(await verdict.textContent()).toMatch(/^DOWN: telegram disconnected for \d+ s \(getUpdates failed \(502: Bad Gateway\) \(4 times in a row\)\), web connected — fix: telegram lost its platform/);
    expect(await verdict.getAttribute('class')).toBe('verdict-down');
    const telegram = page.locator('tr[data-channel="telegram"] td');
    expect(await telegram.allTextContents()).toEqual(['gw-host pid 4242', 'telegram', 'disconnected', expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/), 'getUpdates failed (502: Bad Gateway) (4 times in a row)']);

    await writeHeartbeat(t.redis, beat({ httpUrl: 'http://127.0.0.1:8787', channels: { telegram: { state: 'connected' }, web: { state: 'connected' } } }), t.keyPrefix);
    await page.locator('#channels-verdict.verdict-ok').waitFor();
    expect(await verdict.textContent()).toBe('telegram connected, web connected');
    expect(await telegram.allTextContents()).toEqual(['gw-host pid 4242', 'telegram', 'connected', '', '']);
    await page.close();
  });

  it('a monitor without channels shows no panel', async () => {
    const page = await browser.newPage();
    await page.goto(`${await serveMonitor(false)}/dashboard`);
    await page.locator('#status').filter({ hasText: 'updated' }).waitFor();
    expect(await page.locator('#channels-panel').isHidden()).toBe(true);
    await page.close();
  });
});
