/**
 * The web chat end to end in headless Chromium: page → web API → gateway ingest → Redis → worker →
 * fake LLM → outbound queue → delivery → web channel → SSE → page.
 */
import { mkdirSync } from 'node:fs';
import { type Browser } from 'playwright-core';
import { launchChromium, openChat, sendChat } from '../helpers/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebChannel } from '../../channels/web/index.js';
import { messageText } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readUsage } from '../../src/redis/usage.js';
import { startStack, type Stack } from '../helpers/stack.js';

const SCREENSHOT = 'test-output/web-chat-e2e.png';
const CONVERSATION = 'browser-e2e';

describe('web chat through the whole stack in headless Chromium', () => {
  let stack: Stack;
  let browser: Browser | undefined;

  beforeAll(async () => {
    const web = createWebChannel({});
    stack = await startStack({
      channels: { list: [web], mount: (app) => app.route('/', web.app) },
      handler: (request) => ({ content: `You said **${messageText(request.messages.at(-1)!)}**. Anything else?` }),
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('shows the model reply to a typed message, then the /usage figures', async () => {
    const page = await openChat(browser!, `${stack.gateway.httpUrl}/chat?c=${CONVERSATION}`);
    await sendChat(page, 'hello from the browser');

    const reply = page.locator('.msg.bot:not(.live)').first();
    await reply.waitFor();
    expect(await reply.textContent()).toBe('You said hello from the browser. Anything else?');
    expect(await reply.locator('strong').textContent()).toBe('hello from the browser');
    expect(stack.agentRequests()).toHaveLength(1);
    expect(stack.agentRequests()[0].messages.at(-1)).toMatchObject({ role: 'user', content: 'hello from the browser' });

    const usage = await readUsage(stack.t.redis, sessionKeys(`web:${CONVERSATION}`, stack.t.keyPrefix));
    await page.fill('#input', '/usage');
    await page.click('#send');
    const usageReply = page.locator('.msg.bot', { hasText: 'Usage of this chat' });
    await usageReply.waitFor();
    const text = (await usageReply.textContent()) ?? '';
    expect(text).toContain(`${usage.promptTokens.toLocaleString('en-US')} in`);
    expect(text).toContain(`${usage.completionTokens.toLocaleString('en-US')} out`);
    expect(text).toMatch(/\b1 model call(?!s)/);
    expect(stack.agentRequests()).toHaveLength(1);

    mkdirSync('test-output', { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });
});
