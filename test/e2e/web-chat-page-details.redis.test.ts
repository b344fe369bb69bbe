/**
 * The web chat page's everyday details in headless Chromium against real `chatgate gateway --demo`
 * and `chatgate worker --demo` processes (the demo model answers at once, and writes a word every
 * 120 ms where a reply must still be running: the `/stop` test, the last message of the scroll test): a message sent
 * with no worker running says it waits, and so does `/status`; `/pins` shows two lists; the phone
 * layout shows the whole placeholder; sending while scrolled up shows the message; past
 * conversations can be reopened; `/stop` keeps the partial text and the bubbles keep their order.
 */
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, openChat, sendChat } from '../helpers/browser.js';
import { spawnChatgate, stopChatgate, type ChatgateProcess } from '../helpers/cli-process.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

/** The `/stop` test's pace: a demo reply (~150 words) takes ~18 s, time enough to stop it. */
const SLOW_WORD_DELAY_MS = 120;
const PROCESS_TIMEOUT_MS = 120_000;

describe('web chat page details (Chromium, demo processes)', () => {
  let t: TestRedis;
  let gateway: ChatgateProcess | undefined;
  let worker: ChatgateProcess | undefined;
  let workerWordDelayMs = 0;
  let browser: Browser | undefined;
  let origin: string;

  const env = (wordDelayMs = 0): Record<string, string> => ({
    ...t.env, CHATGATE_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'warn', CHATGATE_DEMO_WORD_DELAY_MS: String(wordDelayMs), CHATGATE_RATE_LIMIT_PER_MINUTE: '0',
  });
  /**
   * Starts the worker (the first test runs without one), its demo model writing a word every
   * `wordDelayMs`; a running worker with another pace is stopped first.
   */
  const startWorker = async (wordDelayMs = 0): Promise<void> => {
    if (worker && workerWordDelayMs !== wordDelayMs) {
      await stopChatgate(worker);
      worker = undefined;
    }
    workerWordDelayMs = wordDelayMs;
    worker ??= spawnChatgate(['worker', '--demo'], env(wordDelayMs));
    await worker.ready();
  };
  const open = (conversation: string, viewport?: { width: number; height: number }): Promise<Page> => openChat(browser!, `${origin}/chat?c=${conversation}`, viewport);
  const send = sendChat;

  beforeAll(async () => {
    t = createTestRedis();
    gateway = spawnChatgate(['gateway', '--demo'], env());
    ({ origin } = await gateway.ready());
    browser = await launchChromium();
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await stopChatgate(worker);
    await stopChatgate(gateway);
    await t?.cleanup();
  });

  it('with no worker running, shows the message as waiting, and /status says it waits for a worker', async () => {
    const page = await open('no-worker');
    await send(page, 'hello, anyone?');
    const note = page.locator('.msg.user .pending');
    await note.filter({ hasText: 'no worker has taken it yet' }).waitFor();
    await send(page, '/status');
    const status = page.locator('.msg.bot', { hasText: 'Status' });
    await status.waitFor();
    const text = (await status.textContent()) ?? '';
    expect(text).not.toContain('Nothing has been said');
    expect(text).toContain('waiting for a worker');
    expect(text).toContain('no worker is alive');

    await startWorker();
    await page.locator('.msg.bot', { hasText: '[demo model]' }).waitFor({ timeout: 60_000 });
    expect(await page.locator('.msg.user .pending').count()).toBe(0);
    await page.close();
  }, PROCESS_TIMEOUT_MS);

  it('/pins shows the notes and the pinned facts as two lists, the heading outside the bullets', { timeout: PROCESS_TIMEOUT_MS }, async () => {
    await startWorker();
    const page = await open('pins');
    await send(page, 'remember that the order is AB-123');
    await page.locator('.msg.bot:not(.live)', { hasText: 'The tool answered' }).waitFor({ timeout: 60_000 });
    await send(page, '/pins');
    const reply = page.locator('.msg.bot', { hasText: 'Pinned facts' });
    await reply.waitFor();
    expect(await reply.locator('li', { hasText: 'Pinned facts' }).count()).toBe(0);
    expect(await reply.locator('ul').count()).toBe(2);
    await page.close();
  });

  it('on a phone, the composer shows its whole placeholder and the header its buttons', async () => {
    const page = await open('phone', { width: 390, height: 760 });
    const fits = await page.locator('#input').evaluate((input: HTMLTextAreaElement) => {
      // A copy of the placeholder in a box of the textarea's content width: its height is what the text needs.
      const style = getComputedStyle(input);
      const probe = document.createElement('div');
      probe.textContent = input.placeholder;
      Object.assign(probe.style, { position: 'absolute', visibility: 'hidden', font: style.font, lineHeight: style.lineHeight, letterSpacing: style.letterSpacing, whiteSpace: 'pre-wrap', overflowWrap: 'break-word' });
      probe.style.width = `${input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)}px`;
      document.body.appendChild(probe);
      const needed = probe.scrollHeight;
      probe.remove();
      return { needed, available: input.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom) };
    });
    expect(fits.needed).toBeLessThanOrEqual(fits.available);
    // The header's buttons are whole and on the screen, their labels on one line.
    for (const id of ['#new-chat', '#past-chats']) {
      const box = await page.locator(id).evaluate((b) => ({ ...b.getBoundingClientRect().toJSON(), clipped: b.scrollWidth > b.clientWidth }));
      expect(box.left).toBeGreaterThanOrEqual(0);
      expect(box.right).toBeLessThanOrEqual(390);
      expect(box.clipped).toBe(false);
      expect(box.height).toBeLessThan(40);
    }
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.close();
  });

  it('sending while scrolled up brings the new message into view', async () => {
    await startWorker();
    const page = await open('scroll', { width: 390, height: 500 });
    for (let i = 0; i < 2; i++) {
      await send(page, `tell me more ${i}`);
      await page.locator('.msg.bot:not(.live)').nth(i).waitFor({ timeout: 60_000 });
    }
    const log = page.locator('#log');
    expect(await log.evaluate((el) => el.scrollHeight > el.clientHeight * 1.5)).toBe(true);
    // Its reply written slowly: a whole reply at once would push the message up out of view again.
    await startWorker(SLOW_WORD_DELAY_MS);
    await log.evaluate((el) => { el.scrollTop = 0; });
    await send(page, 'where did my message go?');
    await expect.poll(() => page.locator('.msg.user', { hasText: 'where did my message go?' }).evaluate((el) => {
      const box = el.getBoundingClientRect();
      const view = document.getElementById('log')!.getBoundingClientRect();
      return box.top >= view.top && box.bottom <= view.bottom;
    })).toBe(true);
    await page.close();
  }, PROCESS_TIMEOUT_MS);

  it('lists this browser\'s past conversations after "New conversation", and reopens one', async () => {
    await startWorker();
    const page = await open('past-one');
    await send(page, 'the first conversation');
    await page.locator('.msg.bot:not(.live)').first().waitFor({ timeout: 60_000 });
    await page.click('#new-chat');
    await page.waitForURL((url) => url.searchParams.get('c') !== 'past-one');
    await page.locator('#status[data-state="connected"]').waitFor();
    await page.click('#past-chats');
    const entry = page.locator('#conversations a', { hasText: 'the first conversation' });
    await entry.waitFor();
    await entry.click();
    await page.waitForURL((url) => url.searchParams.get('c') === 'past-one');
    await page.locator('.msg.user', { hasText: 'the first conversation' }).waitFor();
    await page.close();
  }, PROCESS_TIMEOUT_MS);

  it('after /stop keeps the partial text, and shows /stop before "Stopped."', async () => {
    await startWorker(SLOW_WORD_DELAY_MS);
    const page = await open('stop-partial');
    await send(page, 'tell me a long story');
    const live = page.locator('.msg.bot.live .body');
    await expect.poll(async () => ((await live.count()) > 0 ? ((await live.textContent()) ?? '').length : 0), { timeout: 60_000 }).toBeGreaterThan(20);
    await page.click('#stop');
    await page.locator('.msg.bot', { hasText: 'Stopped.' }).waitFor();
    const bubbles = await page.locator('.msg').evaluateAll((els) => els.map((el) => ({ user: el.classList.contains('user'), text: el.querySelector('.body')?.textContent ?? '' })));
    expect(bubbles.map((b) => (b.user ? `user:${b.text}` : b.text === 'Stopped.' ? 'bot:Stopped.' : 'bot:partial'))).toEqual(['user:tell me a long story', 'bot:partial', 'user:/stop', 'bot:Stopped.']);
    expect(bubbles[1]!.text).toMatch(/^\[demo model\] \S/);
    await page.close();
  }, PROCESS_TIMEOUT_MS);
});
