/**
 * The web chat page in headless Chromium behind the access guard (as when the gateway is bound
 * off loopback): opened once with `?token=`, it keeps working on the cookie — posting and SSE —
 * and keeps showing replies after the gateway restarts (reply numbers start again at 1 under a new epoch).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { createAccessGuard } from '../../src/monitor/index.js';

const TOKEN = 'web-chat-token-0123456789';

describe('web chat page behind the token, across a gateway restart', () => {
  const inbound: InboundMessage[] = [];
  const waiters: Array<() => void> = [];
  let current: WebChannel;
  let server: ServerType;
  let base: string;
  let browser: Browser;
  let page: Page;

  /** A fresh channel, as a restarted gateway builds it (the guard as for a server bound off loopback). */
  async function boot(): Promise<WebChannel> {
    const channel = createWebChannel({ guard: createAccessGuard({ host: '0.0.0.0', monitorToken: TOKEN, tokenOnLoopback: false }) });
    await channel.start(async (message) => {
      inbound.push(message);
      waiters.splice(0).forEach((wake) => wake());
    });
    return channel;
  }

  async function nextInbound(count: number): Promise<InboundMessage> {
    while (inbound.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    return inbound[count - 1];
  }

  beforeAll(async () => {
    current = await boot();
    // The server stays; the app behind it is swapped on "restart", so the page reconnects to the same URL.
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: (request) => current.app.fetch(request), port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 900, height: 700 } });
  });

  afterAll(async () => {
    await browser?.close();
    await current?.stop();
    (server as Server).closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('refuses the page without the token', async () => {
    const res = await fetch(`${base}/chat`);
    expect(res.status).toBe(401);
  });

  it('logs in with ?token= once, drops it from the address bar, and chats on the cookie', async () => {
    await page.goto(`${base}/chat?c=restart-test&token=${TOKEN}`);
    expect(page.url()).toBe(`${base}/chat?c=restart-test`);
    await page.locator('#status', { hasText: /^connected$/ }).waitFor();
    await page.fill('#input', 'hello before the restart');
    await page.keyboard.press('Enter');
    expect(await nextInbound(1)).toMatchObject({ chatId: 'restart-test', text: 'hello before the restart' });
    await current.send({ chatId: 'restart-test' }, { text: 'first reply', mode: 'plain' });
    await current.send({ chatId: 'restart-test' }, { text: 'second reply', mode: 'plain' });
    await page.locator('.msg.bot').nth(1).waitFor();
    expect(await page.locator('.msg.bot').allTextContents()).toEqual(['first reply', 'second reply']);
    expect(await page.locator('.msg.failed').count()).toBe(0);
  });

  it('shows replies numbered from 1 again after the gateway restarts', async () => {
    const before = current;
    current = await boot();
    await before.stop(); // ends the page's event stream; it reconnects to the new channel
    await current.send({ chatId: 'restart-test' }, { text: 'reply after the restart', mode: 'plain' });
    await page.locator('.msg.bot').nth(2).waitFor();
    expect(await page.locator('.msg.bot').allTextContents()).toEqual(['first reply', 'second reply', 'reply after the restart']);

    await page.locator('#status', { hasText: /^connected$/ }).waitFor();
    await page.fill('#input', 'hello after the restart');
    await page.keyboard.press('Enter');
    expect(await nextInbound(2)).toMatchObject({ chatId: 'restart-test', text: 'hello after the restart' });
    await current.send({ chatId: 'restart-test' }, { text: 'second reply after the restart', mode: 'plain' });
    await page.locator('.msg.bot').nth(3).waitFor();
    expect(await page.locator('.msg.bot').allTextContents()).toEqual(['first reply', 'second reply', 'reply after the restart', 'second reply after the restart']);
  });
});
