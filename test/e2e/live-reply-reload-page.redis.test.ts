/**
 * Reloading the web chat page while a reply is being written, in headless Chromium against a real
 * `chatgate start --demo` (the demo model writes one word every 120 ms): the reloaded page gets the
 * text so far and keeps following the live reply — its bubble grows before the final reply comes.
 */
import { type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, openChat, sendChat } from '../helpers/browser.js';
import { startDemo, type Demo } from '../helpers/cli-process.js';

/** Slow enough that a reload lands mid-reply (the demo's small talk is ~60 words: ~7 s). */
const WORD_DELAY_MS = 120;

describe('reloading the web chat page mid-stream (Chromium, demo stack)', () => {
  let demo: Demo | undefined;
  let browser: Browser | undefined;
  let chatUrl: string;

  beforeAll(async () => {
    demo = await startDemo({ CHATGATE_DEMO_WORD_DELAY_MS: String(WORD_DELAY_MS) });
    ({ webChatUrl: chatUrl } = demo);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await demo?.stop();
  });

  it('keeps growing the live bubble after a reload, before the final reply', async () => {
    const page = await openChat(browser!, `${new URL(chatUrl).origin}/chat?c=reload-stream`);
    await sendChat(page, 'tell me about the demo');
    const live = page.locator('.msg.bot.live .body');
    await live.waitFor();

    await page.reload();
    await page.locator('#status[data-state="connected"]').waitFor();
    await expect.poll(async () => ((await live.count()) > 0 ? (await live.textContent()) ?? '' : '')).not.toBe('');
    const first = (await live.textContent()) ?? '';
    // Either the bubble grows while still live, or the final reply replaces it; only the first is right.
    const outcome = await page.waitForFunction((before) => {
      const bubble = document.querySelector('.msg.bot.live .body');
      if (!bubble) return 'final came first';
      return (bubble.textContent ?? '').length > before.length ? 'grew' : false;
    }, first, { timeout: 30_000 });
    expect(await outcome.jsonValue()).toBe('grew');
    await page.locator('.msg.bot:not(.live)', { hasText: '[demo model]' }).waitFor({ timeout: 30_000 });
    expect(await page.locator('.msg.bot.live').count()).toBe(0);
  });
});
