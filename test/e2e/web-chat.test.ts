import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { createDelivery } from '../../src/outbound/delivery.js';
import { createMemoryDeliveryLedger } from '../../src/outbound/delivery-ledger.js';

const SCREENSHOT = 'test-output/web-chat.png';

describe('web chat in headless Chromium', () => {
  let channel: WebChannel;
  let server: ServerType;
  let base: string;
  let browser: Browser;
  let page: Page;
  const inbound: InboundMessage[] = [];
  const waiters: Array<() => void> = [];
  /** How many more posts the test's "gateway" refuses as rate-limited. */
  let refuseNext = 0;

  /** The next message the page posts (the test plays the gateway and the bot). */
  async function nextInbound(count: number): Promise<InboundMessage> {
    while (inbound.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    return inbound[count - 1];
  }

  beforeAll(async () => {
    channel = createWebChannel({}, { title: 'chatgate test' });
    await channel.start(async (message) => {
      if (refuseNext > 0) {
        refuseNext--;
        return { outcome: 'rate_limited', reason: 'You are sending messages faster than 2 a minute, so this one was not read.', retryAfterMs: 30_000 };
      }
      inbound.push(message);
      waiters.splice(0).forEach((wake) => wake());
    });
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: channel.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 900, height: 700 } });
  });

  afterAll(async () => {
    await browser?.close();
    await channel.stop();
    (server as Server).closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('sends what the user types and shows the reply, streamed over SSE', async () => {
    await page.goto(`${base}/chat?c=browser-test`);
    await page.locator('#status', { hasText: 'connected' }).waitFor();
    await page.fill('#input', 'Hello bot, what is 2 + 2?');
    await page.keyboard.press('Enter');

    const message = await nextInbound(1);
    expect(message).toMatchObject({ channel: 'web', chatId: 'browser-test', text: 'Hello bot, what is 2 + 2?', chatType: 'private' });
    expect(message.userId).toMatch(/^u[0-9a-z]+$/);
    await expect(page.locator('.msg.user .body').textContent()).resolves.toBe('Hello bot, what is 2 + 2?');

    await channel.sendTyping({ chatId: message.chatId });
    const delivery = createDelivery({ channels: new Map([['web', channel]]), ledger: createMemoryDeliveryLedger() });
    await delivery.deliver({
      id: 'reply-1', sessionId: 'web:browser-test', channel: 'web', chatId: message.chatId, kind: 'reply',
      text: 'It is **4**. In `js`:\n```js\nconsole.log(2 + 2 < 5 && "<b>not html</b>");\n```\nAnything <i>else</i>?',
    });
    const reply = page.locator('.msg.bot');
    await reply.waitFor();
    expect(await reply.locator('pre').textContent()).toBe('console.log(2 + 2 < 5 && "<b>not html</b>");\n');
    expect(await reply.locator('strong').textContent()).toBe('4');
    expect(await reply.locator('p code').textContent()).toBe('js');
    expect(await reply.textContent()).toContain('Anything <i>else</i>?');
    expect(await reply.locator('b, i').count()).toBe(0);

    mkdirSync('test-output', { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  it('replays the conversation after a reload and keeps its conversation id', async () => {
    await page.reload();
    await page.locator('.msg.bot').waitFor();
    await page.fill('#input', 'second message');
    await page.click('#send');
    expect(await nextInbound(2)).toMatchObject({ chatId: 'browser-test', text: 'second message', userId: inbound[0].userId });
  });

  it('marks a refused message under it with the reason, and sends it again when the wait is over', async () => {
    refuseNext = 1;
    await page.fill('#input', 'one more, quickly');
    await page.keyboard.press('Enter');
    const refused = page.locator('.msg.user.failed', { hasText: 'one more, quickly' });
    await refused.waitFor();
    expect(await refused.locator('.note .reason').textContent()).toBe('Not sent: You are sending messages faster than 2 a minute, so this one was not read.');
    expect(await refused.locator('button.retry').textContent()).toMatch(/^Send again in (30|29) s$/);
    expect(await refused.locator('button.retry').isDisabled()).toBe(true);
    // The wait over (the clock moved on), the same message goes again.
    await page.clock.install();
    await page.clock.fastForward(31_000);
    await refused.locator('button.retry', { hasText: /^Send again$/ }).click();
    expect(await nextInbound(3)).toMatchObject({ text: 'one more, quickly' });
    await page.locator('.msg.user.failed').waitFor({ state: 'detached' });
    expect(await page.locator('.msg.user .note').count()).toBe(0);
  });
});
