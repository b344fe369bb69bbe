/**
 * The web chat page's stop button against the whole stack in headless Chromium: the button posts
 * `/stop`, the gateway reaches the worker running the turn through Redis, the hanging model call is
 * aborted and the page shows "Stopped."; the next message is answered.
 */
import { type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebChannel } from '../../channels/web/index.js';
import { messageText } from '../../src/core/messages.js';
import type { FakeReply } from '../fakes/openai-server.js';
import { launchChromium, openChat, sendChat } from '../helpers/browser.js';
import { startStack, type Stack } from '../helpers/stack.js';

describe('the web chat stop button, through the whole stack', () => {
  let stack: Stack;
  let browser: Browser | undefined;
  let hang = true;

  beforeAll(async () => {
    const web = createWebChannel({});
    stack = await startStack({
      channels: { list: [web], mount: (app) => app.route('/', web.app) },
      handler: (request) => (hang ? { hold: new Promise<FakeReply>(() => undefined) } : { content: `You said ${messageText(request.messages.at(-1)!)}` }),
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('stops a reply being written, then answers the next message', async () => {
    const page = await openChat(browser!, `${stack.gateway.httpUrl}/chat?c=web-stop`);
    await sendChat(page, 'write a very long story');
    await stack.llm.waitForRequest(() => true);
    await page.locator('#stop').waitFor({ state: 'visible' });
    await page.click('#stop');
    await page.locator('.msg.bot', { hasText: 'Stopped.' }).waitFor();
    expect(stack.agentRequests()).toHaveLength(1);

    hang = false;
    await sendChat(page, 'just say hi');
    await page.locator('.msg.bot', { hasText: 'You said just say hi' }).waitFor();
    expect(await page.locator('.msg.bot').allTextContents()).toEqual(['Stopped.', 'You said just say hi']);
    await page.close();
  });
});
