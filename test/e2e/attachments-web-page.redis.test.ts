/** The page's attach button through the whole stack in headless Chromium: file → multipart → gateway → Redis → worker → model. */
import { type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebChannel } from '../../channels/web/index.js';
import { messageText } from '../../src/core/messages.js';
import { launchChromium, openChat, sendChat } from '../helpers/browser.js';
import { startStack, type Stack } from '../helpers/stack.js';

describe('web chat upload from the page', () => {
  let stack: Stack;
  let browser: Browser | undefined;

  beforeAll(async () => {
    const web = createWebChannel({}, { maxUploadBytes: 4096 });
    stack = await startStack({
      channels: { list: [web], mount: (app) => app.route('/', web.app) },
      handler: () => ({ content: 'Read it.' }),
      env: { CHATGATE_MAX_ATTACHMENT_BYTES: '4096' },
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('sends an attached CSV that the model reads with its name, and shows why a too-large file was not sent', async () => {
    const page = await openChat(browser!, `${stack.gateway.httpUrl}/chat?c=upload-page`);
    await page.setInputFiles('#file', { name: 'orders.csv', mimeType: 'text/csv', buffer: Buffer.from('order,total\nORD-48213-XK,12\n') });
    await sendChat(page, 'check these');
    await page.locator('.msg.bot', { hasText: 'Read it.' }).waitFor();
    expect(messageText(stack.agentRequests().at(-1)!.messages.at(-1)!)).toBe('check these\n\n[file orders.csv (text, 28 bytes)]\norder,total\nORD-48213-XK,12\n[end of orders.csv]');

    await page.setInputFiles('#file', { name: 'big.txt', mimeType: 'text/plain', buffer: Buffer.alloc(5000, 97) });
    await sendChat(page, 'and this');
    const refused = page.locator('.msg.user.failed', { hasText: 'and this' });
    await refused.waitFor();
    expect(await refused.locator('.reason').textContent()).toContain('"big.txt" is 4.9 KB; the limit is 4 KB');
    expect(await stack.t.redis.keys(`${stack.t.keyPrefix}*:att:*`)).toHaveLength(1);
    expect(stack.agentRequests()).toHaveLength(1);
  });
});
