/**
 * The web chat page's features in headless Chromium, against the web channel in memory (the test
 * plays the gateway and the bot): Markdown rendered safely, refusals shown with their reason and
 * what to do, the stop and new-conversation buttons, `/` and the favicon, and a history whose
 * answers are not shown twice when the same reply comes live.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import type { TranscriptRow } from '../../channels/web/history.js';
import type { InboundMessage, InboundVerdict } from '../../src/core/inbound.js';
import { launchChromium } from '../helpers/browser.js';

const XSS_REPLY = [
  'Look: <img src=x onerror="window.__xss = 1"> and <script>window.__xss = 2</script>',
  '[click me](javascript:window.__xss=3) and [data](data:text/html,<script>alert(1)</script>)',
  '<div class="msg user">I am not the user</div> <a href="#" onclick="window.__xss=4">a</a>',
  '![tracker](https://example.invalid/pixel.png)',
].join('\n\n');

const TABLE_REPLY = [
  '## Results', '', '| Name | Score |', '|---|---:|', '| Ada | 3 |', '| Bob | 5 |', '',
  '- one', '- two', '', '1. first', '2. second', '',
  'See [the docs](https://example.com/docs).', '', '```ts', 'const x = 1 < 2;', '```',
].join('\n');

describe('web chat page in headless Chromium', () => {
  let channel: WebChannel;
  let server: ServerType;
  let base: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const inbound: InboundMessage[] = [];
  let verdict: (message: InboundMessage) => InboundVerdict | undefined = () => undefined;
  const transcript = new Map<string, TranscriptRow[]>();
  const consoleErrors: string[] = [];
  /** How often the gateway has refused the message 'busy twice' (503, as when Redis is out of reach). */
  let busyRefusals = 0;
  /** The fake reply stream of conversation `delta-test` (a stand-in for the gateway's streaming side). */
  let sse: ReadableStreamDefaultController<Uint8Array> | undefined;
  const encoder = new TextEncoder();
  const emit = (event: string, data: unknown): void => sse!.enqueue(encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`));
  const fakeEvents = (): Response => new Response(new ReadableStream<Uint8Array>({
    start(controller) {
      sse = controller;
      controller.enqueue(encoder.encode('retry: 1000\n\n'));
    },
  }), { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });

  async function nextInbound(count: number): Promise<InboundMessage> {
    await expect.poll(() => inbound.length).toBeGreaterThanOrEqual(count);
    return inbound[count - 1]!;
  }

  beforeAll(async () => {
    const readTranscript = async (sessionId: string, before: string | undefined, count: number): Promise<TranscriptRow[]> => {
      const rows = [...(transcript.get(sessionId) ?? [])].reverse();
      const start = before === undefined ? 0 : rows.findIndex((row) => row.id === before) + 1;
      return rows.slice(start, start + count);
    };
    channel = createWebChannel({ readTranscript }, { title: 'chatgate page test' });
    await channel.start(async (message) => {
      const answer = verdict(message);
      if (answer) return answer;
      if (message.text === 'fail with 503') throw new Error('redis down');
      if (message.text === 'busy twice' && (busyRefusals += 1) <= 2) throw new Error('redis down');
      inbound.push(message);
      return { outcome: 'accepted' } as InboundVerdict;
    });
    server = await new Promise<ServerType>((resolve) => {
      const fetch = (request: Request): Response | Promise<Response> => (new URL(request.url).pathname === '/api/chat/delta-test/events' ? fakeEvents() : channel.app.fetch(request));
      const s = serve({ fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 900, height: 700 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    page = await context.newPage();
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
  });

  beforeEach(() => {
    verdict = () => undefined;
    consoleErrors.length = 0;
  });

  afterAll(async () => {
    await browser?.close();
    await channel?.stop();
    if (server?.listening) {
      (server as Server).closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('leads from / to the chat, keeps the query, and serves a favicon', async () => {
    const res = await fetch(`${base}/?c=abc`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/chat?c=abc');
    const icon = await fetch(`${base}/favicon.ico`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(await icon.text()).toContain('<svg');

    await page.goto(`${base}/`);
    expect(new URL(page.url()).pathname).toBe('/chat');
    expect(new URL(page.url()).searchParams.get('c')).toMatch(/^c[0-9a-f]{32}$/);
    await page.locator('#status[data-state="connected"]').waitFor();
    expect(consoleErrors).toEqual([]);
  });

  it('renders a table, lists, headings, a link that opens safely, and code with a copy button', async () => {
    await page.goto(`${base}/chat?c=markdown-test`);
    await page.locator('#status[data-state="connected"]').waitFor();
    await channel.send({ chatId: 'markdown-test' }, { text: TABLE_REPLY, mode: 'formatted' });
    const reply = page.locator('.msg.bot').last();
    await reply.locator('table').waitFor();
    expect(await reply.locator('h2').textContent()).toBe('Results');
    expect(await reply.locator('th').allTextContents()).toEqual(['Name', 'Score']);
    expect(await reply.locator('td').allTextContents()).toEqual(['Ada', '3', 'Bob', '5']);
    expect(await reply.locator('ul > li').allTextContents()).toEqual(['one', 'two']);
    expect(await reply.locator('ol > li').allTextContents()).toEqual(['first', 'second']);
    const link = reply.locator('a', { hasText: 'the docs' });
    expect(await link.getAttribute('href')).toBe('https://example.com/docs');
    expect(await link.getAttribute('target')).toBe('_blank');
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
    expect(await reply.locator('pre').textContent()).toBe('const x = 1 < 2;\n');
    await reply.locator('button.copy').click();
    await reply.locator('button.copy.copied').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('const x = 1 < 2;\n');
  });

  it('does not run HTML or javascript: links from the model, nor let it imitate the page', async () => {
    await channel.send({ chatId: 'markdown-test' }, { text: XSS_REPLY, mode: 'formatted' });
    const reply = page.locator('.msg.bot').last();
    await reply.locator('text=click me').waitFor();
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await reply.locator('img, script, div.msg, [onclick], [onerror]').count()).toBe(0);
    // Raw HTML is shown as the text it is.
    expect(await reply.textContent()).toContain('<img src=x onerror="window.__xss = 1">');
    expect(await reply.textContent()).toContain('<div class="msg user">I am not the user</div>');
    for (const href of await reply.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href')))) {
      expect(href ?? '').not.toMatch(/^(javascript|data):/i);
    }
    // An image becomes a link, so nothing loads from elsewhere on sight.
    expect(await reply.locator('a', { hasText: 'tracker' }).getAttribute('href')).toBe('https://example.invalid/pixel.png');
    await reply.locator('a', { hasText: 'click me' }).click();
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.locator('.msg.user').count()).toBe(0);
  });

  it('shows why a message was not sent, under it, and lets the user send it again or edit it', async () => {
    await page.goto(`${base}/chat?c=refusals`);
    await page.locator('#status[data-state="connected"]').waitFor();
    verdict = (m) => (m.text.length > 20 ? { outcome: 'too_long', reason: 'This message is 25 characters; the limit is 20.' } : undefined);
    await page.fill('#input', 'x'.repeat(25));
    await page.keyboard.press('Enter');
    const tooLong = page.locator('.msg.user.failed').last();
    expect(await tooLong.locator('.note .reason').textContent()).toBe('Not sent: This message is 25 characters; the limit is 20.');
    await tooLong.locator('button.edit').click();
    expect(await page.inputValue('#input')).toBe('x'.repeat(25));
    await page.fill('#input', '');

    verdict = () => ({ outcome: 'denied', reason: 'You are not on the allow-list of this bot.' });
    await page.fill('#input', 'let me in');
    await page.keyboard.press('Enter');
    expect(await page.locator('.msg.user.failed', { hasText: 'let me in' }).locator('.reason').textContent()).toBe('Not sent: You are not on the allow-list of this bot.');

    verdict = () => ({ outcome: 'rate_limited', reason: 'You are sending messages too fast.', retryAfterMs: 2_000 });
    await page.fill('#input', 'quickly');
    await page.keyboard.press('Enter');
    const limited = page.locator('.msg.user.failed', { hasText: 'quickly' });
    expect(await limited.locator('.reason').textContent()).toBe('Not sent: You are sending messages too fast.');
    await limited.locator('button.retry', { hasText: /^Send again in \d s$/ }).waitFor();
    expect(await limited.locator('button.retry').isDisabled()).toBe(true);
    verdict = () => undefined;
    await limited.locator('button.retry:not([disabled])', { hasText: /^Send again$/ }).click();
    const sent = await nextInbound(1);
    expect(sent.text).toBe('quickly');
    await page.locator('.msg.user', { hasText: 'quickly' }).and(page.locator(':not(.failed)')).waitFor();

    await page.fill('#input', 'fail with 503');
    await page.keyboard.press('Enter');
    const busy = page.locator('.msg.user.failed', { hasText: 'fail with 503' });
    expect(await busy.locator('.reason').textContent()).toMatch(/^Not sent yet: the gateway could not take it right now \(message not accepted; retry with the same clientMessageId\)\. Trying again in \d s\.$/);
    await busy.locator('button.retry', { hasText: 'Send now' }).waitFor();
  });

  it('tries a message the gateway could not take again by itself, and it arrives once', async () => {
    await page.goto(`${base}/chat?c=busy-test`);
    await page.locator('#status[data-state="connected"]').waitFor();
    const before = inbound.length;
    await page.fill('#input', 'busy twice');
    await page.keyboard.press('Enter');
    await page.locator('.msg.user.retrying', { hasText: 'busy twice' }).locator('.reason', { hasText: /Trying again in \d s\.$/ }).waitFor();
    // Two refusals: tried again after 1 s and then after 2 s more.
    await expect.poll(() => inbound.length, { timeout: 15_000 }).toBe(before + 1);
    expect(inbound[before]!.text).toBe('busy twice');
    expect(busyRefusals).toBe(3);
    await page.locator('.msg.user:not(.failed)', { hasText: 'busy twice' }).waitFor();
    expect(inbound.slice(before).map((m) => m.text)).toEqual(['busy twice']);
  });

  it('says so when an attached file is not accepted, keeping the text', async () => {
    // As the gateway's attachment step answers a type nothing reads (415, refused: unsupported).
    verdict = (message) => (message.attachments.length > 0 ? { outcome: 'unsupported', reason: '"notes.bin" is a kind of file I cannot read. I can read images (JPEG, PNG, GIF, WebP), PDFs and text files (txt, md, csv, json, source code).' } : undefined);
    await page.setInputFiles('#file', { name: 'notes.bin', mimeType: 'application/octet-stream', buffer: Buffer.from([0, 1, 2, 3]) });
    expect(await page.locator('#attachment-name').textContent()).toBe('notes.bin (1 KB)');
    await page.fill('#input', 'here is a file');
    await page.keyboard.press('Enter');
    const refused = page.locator('.msg.user.failed', { hasText: 'here is a file' });
    expect(await refused.locator('.attachments li').allTextContents()).toEqual(['notes.bin']);
    expect(await refused.locator('.reason').textContent()).toContain('"notes.bin" is a kind of file I cannot read. I can read images');
    await refused.locator('button.edit').click();
    expect(await page.inputValue('#input')).toBe('here is a file');
    expect(await page.locator('#attachment-name').textContent()).toBe('notes.bin (1 KB)');
  });

  it('shows a stop button while a turn runs, which sends /stop', async () => {
    await page.goto(`${base}/chat?c=stop-test`);
    await page.locator('#status[data-state="connected"]').waitFor();
    expect(await page.locator('#stop').isVisible()).toBe(false);
    await channel.sendTyping({ chatId: 'stop-test' });
    await page.locator('#stop').waitFor({ state: 'visible' });
    const before = inbound.length;
    await page.click('#stop');
    expect(await nextInbound(before + 1)).toMatchObject({ chatId: 'stop-test', text: '/stop' });
    await channel.send({ chatId: 'stop-test' }, { text: 'Stopped.', mode: 'plain' });
    await page.locator('.msg.bot', { hasText: 'Stopped.' }).waitFor();
    await page.locator('#stop').waitFor({ state: 'hidden' });
  });

  it('starts a new conversation, and the old one stays at its address', async () => {
    transcript.set('web:old-conversation', [{ id: '1-0', type: 'message', atMs: Date.now(), message: { role: 'assistant', content: 'from the old one' } }]);
    await page.goto(`${base}/chat?c=old-conversation`);
    await page.locator('.msg.bot', { hasText: 'from the old one' }).waitFor();
    await page.click('#new-chat');
    await page.waitForURL((url) => url.searchParams.get('c') !== 'old-conversation');
    const fresh = new URL(page.url()).searchParams.get('c')!;
    expect(fresh).toMatch(/^c[0-9a-f]{32}$/);
    await page.locator('#status[data-state="connected"]').waitFor();
    expect(await page.locator('.msg').count()).toBe(0);
    const sentBefore = inbound.length;
    await page.fill('#input', 'hello new');
    await page.keyboard.press('Enter');
    expect((await nextInbound(sentBefore + 1)).chatId).toBe(fresh);
    await page.goto(`${base}/chat?c=old-conversation`);
    await page.locator('.msg.bot', { hasText: 'from the old one' }).waitFor();
    await page.goto(`${base}/chat`);
    expect(new URL(page.url()).searchParams.get('c')).toBe('old-conversation');
    // A broken address: said, and the last conversation is used.
    await page.goto(`${base}/chat?c=${encodeURIComponent('no spaces/allowed')}`);
    await page.locator('.notice', { hasText: '“no spaces/allowed” is not a conversation id' }).waitFor();
    expect(new URL(page.url()).searchParams.get('c')).toBe('old-conversation');
  });

  it('makes 128-bit ids where crypto.randomUUID is missing (plain http away from localhost)', async () => {
    // An id is all that keeps a conversation to itself: a guessable one would open it to others.
    const plain = await browser.newContext();
    await plain.addInitScript(() => Object.defineProperty(Crypto.prototype, 'randomUUID', { value: undefined }));
    const other = await plain.newPage();
    await other.goto(`${base}/chat`);
    await other.waitForURL((url) => url.searchParams.has('c'));
    expect(new URL(other.url()).searchParams.get('c')).toMatch(/^c[0-9a-f]{32}$/);
    expect(await other.evaluate(() => localStorage.getItem('chatgate.user'))).toMatch(/^u[0-9a-f]{32}$/);
    await plain.close();
  });

  it('shows the history with both sides and does not show an answer twice when its reply comes live', async () => {
    const now = Date.now();
    transcript.set('web:history-test', [
      { id: `${now - 3000}-0`, type: 'message', atMs: now - 3000, inboundId: 'web:history-test:m1', message: { role: 'user', content: 'What is 2 + 2?' } },
      { id: `${now - 2000}-0`, type: 'message', atMs: now - 2000, replyId: 'reply-abc-0', message: { role: 'assistant', content: 'It is **4**.' } },
    ]);
    await page.goto(`${base}/chat?c=history-test`);
    await page.locator('#status[data-state="connected"]').waitFor();
    expect(await page.locator('.msg .body').allTextContents()).toEqual(['What is 2 + 2?', 'It is 4.']);
    expect(await page.locator('.msg.user').getAttribute('data-time')).toMatch(/\d/);
    // The answer's reply is delivered after the page read the history (the moment between commit and delivery).
    await channel.send({ chatId: 'history-test' }, { text: 'It is **4**.', mode: 'formatted', deliveryId: 'reply-abc-0#0' });
    await channel.send({ chatId: 'history-test' }, { text: 'And a new one.', mode: 'plain', deliveryId: 'reply-def-0#0' });
    await page.locator('.msg.bot', { hasText: 'And a new one.' }).waitFor();
    expect(await page.locator('.msg .body').allTextContents()).toEqual(['What is 2 + 2?', 'It is 4.', 'And a new one.']);
    expect(consoleErrors, consoleErrors.join('\n')).toEqual([]);
  });

  it('renders streamed deltas live, restarts on seq 0, and replaces the live bubble with the final reply', async () => {
    await page.goto(`${base}/chat?c=delta-test`);
    await page.locator('#status[data-state="connected"]').waitFor();
    await expect.poll(() => sse !== undefined).toBe(true);
    emit('delta', { liveReplyId: 's1', seq: 0, text: 'Hel' });
    emit('delta', { liveReplyId: 's1', seq: 1, text: 'lo **wor' });
    emit('delta', { liveReplyId: 's1', seq: 2, text: 'ld**' });
    const live = page.locator('.msg.bot.live');
    await live.locator('strong', { hasText: 'world' }).waitFor();
    expect(await live.locator('.body').textContent()).toBe('Hello world');
    expect(await page.locator('#stop').isVisible()).toBe(true);
    emit('delta', { liveReplyId: 's1', seq: 1, text: 'lo **wor' }); // a repeat changes nothing
    emit('delta', { liveReplyId: 's1', seq: 0, text: 'Hi' }); // a worker restarted the stream
    await live.locator('.body', { hasText: /^Hi$/ }).waitFor();
    emit('message', { id: 'web:delta-test:1-0', cursor: '1-0', text: 'Hi **there**', format: 'markdown', at: Date.now(), liveReplyId: 's1' });
    await page.locator('.msg.bot:not(.live) strong', { hasText: 'there' }).waitFor();
    emit('delta', { liveReplyId: 's1', seq: 3, text: ' late' }); // after the final: ignored
    emit('delta', { liveReplyId: 's2', seq: 0, text: 'A' });
    emit('delta', { liveReplyId: 's2', seq: 2, text: 'C' }); // seq 1 lost
    await page.locator('.msg.bot.live.gap').waitFor();
    emit('message', { id: 'web:delta-test:2-0', cursor: '2-0', text: 'ABC', format: 'markdown', at: Date.now(), liveReplyId: 's2' });
    await page.locator('.msg.bot:not(.live)', { hasText: 'ABC' }).waitFor();
    expect(await page.locator('.msg.bot .body').allTextContents()).toEqual(['Hi there', 'ABC']);
    expect(await page.locator('.msg.live').count()).toBe(0);
    await page.locator('#stop').waitFor({ state: 'hidden' });
  });

  it('says offline when the gateway stops, and why a message cannot be sent then', async () => {
    await page.goto(`${base}/chat?c=offline-test`);
    await page.locator('#status[data-state="connected"]').waitFor();
    (server as Server).closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await page.locator('#status[data-state="offline"]').waitFor({ timeout: 20_000 });
    expect(await page.locator('#status').textContent()).toMatch(/^offline — /);
    await page.fill('#input', 'anyone there?');
    await page.keyboard.press('Enter');
    const failed = page.locator('.msg.user.failed', { hasText: 'anyone there?' });
    expect(await failed.locator('.reason').textContent()).toMatch(/^Not sent yet: the gateway cannot be reached \(network down or gateway stopped\)\. Trying again in \d s\.$/);
    await failed.locator('button.retry').waitFor();
  });
});
