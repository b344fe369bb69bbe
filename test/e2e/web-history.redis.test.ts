/**
 * The web chat's history through the whole stack in headless Chromium: what was said (both sides)
 * comes back after a reload from the session's transcript in Redis — not from the browser — once
 * each, and older messages page in on request.
 */
import { type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebChannel } from '../../channels/web/index.js';
import { messageText } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscriptBefore } from '../../src/redis/transcript.js';
import { launchChromium, openChat, sendChat } from '../helpers/browser.js';
import { startStack, type Stack } from '../helpers/stack.js';

describe('web chat history in headless Chromium', () => {
  let stack: Stack;
  let browser: Browser | undefined;

  beforeAll(async () => {
    // As the gateway wires it (src/gateway/channels.ts): the transcript read over the stack's Redis.
    const web = createWebChannel({ readTranscript: (sessionId, before, count) => readTranscriptBefore(stack.t.redis, sessionKeys(sessionId, stack.t.keyPrefix), before, count) });
    stack = await startStack({
      channels: { list: [web], mount: (app) => app.route('/', web.app) },
      handler: (request) => ({ content: `You said **${messageText(request.messages.at(-1)!)}**.` }),
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('shows both sides after a reload, with their times, once each, and goes on live', async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
    await page.goto(`${stack.gateway.httpUrl}/chat?c=reload-test`);
    await page.locator('#status[data-state="connected"]').waitFor();
    for (const [k, text] of ['first question', 'second question'].entries()) {
      await sendChat(page, text);
      await page.locator('.msg.bot:not(.live)').nth(k).waitFor();
    }
    const shown = ['first question', 'You said first question.', 'second question', 'You said second question.'];
    expect(await page.locator('.msg .body').allTextContents()).toEqual(shown);

    // A fresh browser profile: nothing in memory or storage, only the address.
    await context.close();
    const fresh = await (await browser!.newContext()).newPage();
    await fresh.goto(`${stack.gateway.httpUrl}/chat?c=reload-test`);
    await fresh.locator('#status[data-state="connected"]').waitFor();
    await fresh.locator('.msg.bot:not(.live)').nth(1).waitFor();
    expect(await fresh.locator('.msg .body').allTextContents()).toEqual(shown);
    expect(await fresh.locator('.msg.user').count()).toBe(2);
    for (const time of await fresh.locator('.msg').evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.time))) expect(time).toMatch(/\d{1,2}:\d{2}/);
    expect(await fresh.locator('.msg.bot strong').allTextContents()).toEqual(['first question', 'second question']);

    await sendChat(fresh, 'third question');
    await fresh.locator('.msg.bot:not(.live)').nth(2).waitFor();
    expect(await fresh.locator('.msg .body').allTextContents()).toEqual([...shown, 'third question', 'You said third question.']);
    // The answers in the history are named by the replies the page received live: that is how it drops a repeat.
    const api = `${stack.gateway.httpUrl}/api/chat/reload-test`;
    const history = await (await fetch(`${api}/history`)).json() as { messages: Array<{ id: string; role: string }> };
    const replies = await (await fetch(`${api}/messages?after=0&timeoutMs=0`)).json() as { messages: Array<{ replyId?: string }> };
    const answerIds = history.messages.filter((m) => m.role === 'assistant').map((m) => m.id);
    expect(answerIds).toHaveLength(3);
    expect(answerIds.every((id) => /^reply-[0-9a-f]{24}-0$/.test(id))).toBe(true);
    expect(replies.messages.map((m) => m.replyId)).toEqual(answerIds);
    expect(history.messages.filter((m) => m.role === 'user').map((m) => m.id)).toEqual([expect.stringMatching(/^web:reload-test:m/), expect.stringMatching(/^web:reload-test:m/), expect.stringMatching(/^web:reload-test:m/)]);
    await fresh.reload();
    await fresh.locator('.msg.bot:not(.live)').nth(2).waitFor();
    expect(await fresh.locator('.msg .body').allTextContents()).toEqual([...shown, 'third question', 'You said third question.']);
  });

  it('pages older messages in, oldest first, until there are none', async () => {
    const keys = sessionKeys('web:paging-test', stack.t.keyPrefix);
    const start = Date.now() - 200_000;
    for (let k = 0; k < 60; k++) {
      const entries = [
        { type: 'message', message: { role: 'user', content: `question ${k}` }, tokens: 3, inboundId: `web:paging-test:m${k}`, atMs: start + k * 1000 },
        { type: 'message', message: { role: 'assistant', content: null, tool_calls: [{ id: `t${k}`, type: 'function', function: { name: 'clock', arguments: '{}' } }] }, tokens: 3, atMs: start + k * 1000 + 1 },
        { type: 'message', message: { role: 'tool', tool_call_id: `t${k}`, content: 'noon' }, tokens: 3, atMs: start + k * 1000 + 2 },
        { type: 'message', message: { role: 'assistant', content: `answer ${k}` }, tokens: 3, replyId: `reply-${k}-0`, atMs: start + k * 1000 + 3 },
      ];
      for (const entry of entries) await stack.t.redis.xadd(keys.transcript, '*', 'data', JSON.stringify(entry));
    }
    const page = await openChat(browser!, `${stack.gateway.httpUrl}/chat?c=paging-test`);
    const expected = Array.from({ length: 60 }, (_, k) => [`question ${k}`, `answer ${k}`]).flat();
    expect(await page.locator('.msg .body').allTextContents()).toEqual(expected.slice(-50));
    // The button, activated from the keyboard: a mouse click first scrolls it into view, and that
    // scroll (to the top of the log) loads a page by itself — then the click, once the button is
    // enabled again, loads a second one, or not, depending on which came first.
    await page.locator('#earlier').evaluate((button: HTMLButtonElement) => button.focus({ preventScroll: true }));
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('.msg').count()).toBe(100);
    expect(await page.locator('.msg .body').allTextContents()).toEqual(expected.slice(-100));
    // Scrolling to the top loads the rest.
    await page.locator('#log').evaluate((log) => { log.scrollTop = 0; });
    await expect.poll(() => page.locator('.msg').count()).toBe(120);
    expect(await page.locator('.msg .body').allTextContents()).toEqual(expected);
    await page.locator('#earlier').waitFor({ state: 'hidden' });

    const api = `${stack.gateway.httpUrl}/api/chat/paging-test/history`;
    const first = await (await fetch(`${api}?limit=100`)).json() as { messages: Array<{ text: string }>; before: string };
    expect(first.messages).toHaveLength(100);
    const rest = await (await fetch(`${api}?limit=100&before=${first.before}`)).json() as { messages: Array<{ text: string }>; before: string | null };
    expect(rest.messages.map((m) => m.text)).toEqual(expected.slice(0, 20));
    expect(rest.before).toBeNull();
    expect((await fetch(`${api}?limit=101`)).status).toBe(400);
    expect((await fetch(`${api}?before=yesterday`)).status).toBe(400);
  });
});
