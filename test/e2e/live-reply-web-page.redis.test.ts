/**
 * Streaming in the real web chat page, in headless Chromium: the reply grows in a live bubble from
 * the SSE deltas of the whole stack (gateway + worker + fake LLM on real Redis), then the final
 * formatted reply takes the bubble's place — one bot message, never two.
 */
import { type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebChannel } from '../../channels/web/index.js';
import { launchChromium, openChat, sendChat } from '../helpers/browser.js';
import { startStack, type Stack } from '../helpers/stack.js';

const ANSWER = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ') + ' and **bold end**.';

describe('streaming in the web chat page (Chromium)', () => {
  let stack: Stack;
  let browser: Browser | undefined;

  beforeAll(async () => {
    const web = createWebChannel({});
    stack = await startStack({
      channels: { list: [web], mount: (app) => app.route('/', web.app) },
      handler: (request) => JSON.stringify(request.messages.at(-1)).includes('use a tool')
        ? { content: 'Let me look that up first.', toolCalls: [{ name: 'current_time', arguments: {} }], pieceDelayMs: 25 }
        : { content: ANSWER, pieceDelayMs: 25 },
      // One model call a turn: a turn whose call asks for a tool ends with the "stopped after 1 model call" notice.
      worker: { liveReplyPublishIntervalMs: 20, maxModelCalls: 1 },
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('shows the reply growing in a live bubble, then the final reply in its place', async () => {
    const page = await openChat(browser!, `${stack.gateway.httpUrl}/chat?c=stream-page`);
    await sendChat(page, 'write slowly');
    const live = page.locator('.msg.bot.live');
    await live.waitFor();
    const partial = (await live.locator('.body').textContent()) ?? '';
    expect(ANSWER.startsWith(partial.trimEnd())).toBe(true);
    expect(partial.length).toBeLessThan(ANSWER.length);
    await page.locator('.msg.bot:not(.live) strong', { hasText: 'bold end' }).waitFor();
    expect(await page.locator('.msg.bot').count()).toBe(1);
    expect(await page.locator('.msg.bot.live').count()).toBe(0);
    expect(await page.locator('.msg.bot .body').textContent()).toBe(ANSWER.replace(/\*\*/g, ''));
  });

  it('a turn that ends with a notice instead of a reply leaves no live bubble behind', async () => {
    const page = await openChat(browser!, `${stack.gateway.httpUrl}/chat?c=stream-notice`);
    await sendChat(page, 'use a tool');
    await page.locator('.msg.bot:not(.live)', { hasText: 'model call' }).waitFor();
    expect(await page.locator('.msg.bot').count()).toBe(1);
    expect(await page.locator('.msg.bot.live').count()).toBe(0);
    expect(await page.locator('.msg.bot .body').textContent()).not.toContain('Let me look');
  });
});
