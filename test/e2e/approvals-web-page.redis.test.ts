/**
 * Approvals in the real web chat page (headless Chromium) against a real gateway and worker on real
 * Redis, with the web chat wired as `chatgate` wires it: an `ask` tool's question shows Approve /
 * Always in this chat / Deny; a press decides through the gateway's one decision path, the question
 * shows the decision without buttons — also after a reload, and also when a typed `/stop` decided — and a press in a second tab that still
 * shows the buttons says "Already decided…" and runs nothing; "Always in this chat" lets the next
 * call run without asking. On a phone-width screen the buttons are visible.
 */
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageText } from '../../src/core/messages.js';
import type { FakeRequest } from '../fakes/openai-server.js';
import { launchChromium } from '../helpers/browser.js';
import { createFileWriter } from '../helpers/files.js';
import { startStack, type Stack } from '../helpers/stack.js';

/** The test's folder and `write_file`, a tool with a real effect there that asks first. */
const { tool: writeFile, lines, remove } = createFileWriter('chatgate-web-approvals-');


const toolResults = (request: FakeRequest): string[] => request.messages.filter((m) => m.role === 'tool').map((m) => messageText(m));
const QUESTION = '.msg.bot:has-text("Approval needed")';

describe('approvals in the web chat page (Chromium)', () => {
  let stack: Stack;
  let browser: Browser | undefined;

  beforeAll(async () => {
    stack = await startStack({
      // No channels given: the gateway builds the web chat over Redis, with the transcript's history.
      handler: (request) => {
        const last = request.messages.at(-1)!;
        if (last.role === 'tool') return { content: `Done: ${messageText(last)}` };
        const text = messageText(last);
        return { toolCalls: [{ name: 'write_file', arguments: { file: `${text.split(' ')[0]}.txt`, text }, id: `call_${request.index}` }] };
      },
      tools: [writeFile],
      env: { CHATGATE_RATE_LIMIT_PER_MINUTE: '0' },
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
    remove();
  });

  const open = async (conversation: string, viewport = { width: 900, height: 700 }, blockLive = false): Promise<Page> => {
    const page = await browser!.newPage({ viewport });
    // A tab that hears nothing live (its event stream answers and ends): it shows what its history said.
    if (blockLive) await page.route('**/events?*', (route) => route.fulfill({ status: 200, contentType: 'text/event-stream', body: 'retry: 600000\n\n' }));
    await page.goto(`${stack.gateway.httpUrl}/chat?c=${conversation}`);
    if (!blockLive) await page.locator('#status[data-state="connected"]').waitFor();
    return page;
  };
  const send = async (page: Page, text: string): Promise<void> => {
    await page.fill('#input', text);
    await page.keyboard.press('Enter');
  };
  const idOf = async (page: Page): Promise<string> => /\(([a-z0-9]{6})\)/.exec((await page.locator(QUESTION).first().textContent()) ?? '')![1]!;

  it('Approve writes once; the question shows the decision without buttons, after a reload too; a stale tab is told "Already decided"', async () => {
    const page = await open('approve-page');
    await send(page, 'alpha one');
    const question = page.locator(QUESTION);
    await question.locator('.choices button', { hasText: 'Approve' }).first().waitFor();
    expect(await question.locator('.choices button').allTextContents()).toEqual(['Approve', 'Always in this chat', 'Deny']);
    const id = await idOf(page);
    expect(await question.locator('.body').textContent()).toContain('file: "alpha.txt"');
    expect(lines('alpha.txt')).toEqual([]);
    // A second tab opened now shows the question with its buttons, and hears nothing live after.
    const stale = await open('approve-page', undefined, true);
    await stale.locator(QUESTION).locator('.choices button', { hasText: 'Deny' }).waitFor();

    await question.locator('.choices button', { hasText: /^Approve$/ }).click();
    await page.locator('.msg.bot', { hasText: 'Done: wrote alpha.txt' }).waitFor();
    await question.locator('.body', { hasText: `Approved by web user: write_file (${id}).` }).waitFor();
    expect(await question.locator('.choices').count()).toBe(0);
    expect(lines('alpha.txt')).toEqual(['alpha one']);
    expect(toolResults(stack.agentRequests().at(-1)!)).toEqual(['wrote alpha.txt']);

    await page.reload();
    await page.locator('.msg.bot', { hasText: 'Done: wrote alpha.txt' }).waitFor();
    await page.locator(QUESTION).locator('.body', { hasText: `Approved by web user: write_file (${id}).` }).waitFor();
    expect(await page.locator('.choices').count()).toBe(0);

    await stale.locator(QUESTION).locator('.choices button', { hasText: 'Deny' }).click();
    await stale.locator(QUESTION).locator('.body', { hasText: `Already decided — Approved by web user: write_file (${id}).` }).waitFor();
    expect(await stale.locator('.choices').count()).toBe(0);
    // A second press of the same button, straight at the API: told, nothing runs.
    const again = await page.evaluate(async ([replyId, command]) => {
      const res = await fetch('/api/chat/approve-page/presses', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ replyId, command }) });
      return { status: res.status, body: await res.json() as { answer: string; settled: boolean } };
    }, [await page.locator(QUESTION).getAttribute('data-reply-id'), `/approve ${id}`] as const);
    expect(again).toEqual({ status: 200, body: { answer: `Already decided — Approved by web user: write_file (${id}).`, settled: true } });
    expect(lines('alpha.txt')).toEqual(['alpha one']);
    // The question was edited once: what the first press showed is what a reload shows.
    await page.reload();
    await page.locator(QUESTION).locator('.body', { hasText: `Approved by web user: write_file (${id}).` }).waitFor();
    expect(await page.locator(QUESTION).locator('.body').textContent()).not.toContain('Already decided');
  });

  it('on a phone-width screen the buttons are visible; Deny writes nothing and the model is told', async () => {
    const width = 375;
    const page = await open('deny-phone', { width, height: 667 });
    await send(page, 'beta two');
    const question = page.locator(QUESTION);
    const buttons = question.locator('.choices button');
    await buttons.first().waitFor();
    expect(await buttons.count()).toBe(3);
    for (const button of await buttons.all()) {
      expect(await button.isVisible()).toBe(true);
      const box = (await button.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(width);
    }
    const id = await idOf(page);
    await buttons.filter({ hasText: 'Deny' }).click();
    await page.locator('.msg.bot', { hasText: 'Done: Error: the user denied' }).waitFor();
    await question.locator('.body', { hasText: `Denied by web user: write_file (${id}).` }).waitFor();
    expect(await question.locator('.choices').count()).toBe(0);
    expect(lines('beta.txt')).toEqual([]);
    expect(toolResults(stack.agentRequests().at(-1)!)[0]).toMatch(/^Error: the user denied this call of write_file/);
  });

  it('a question decided by a typed /stop shows it and loses its buttons, as after a press', async () => {
    const page = await open('stop-typed');
    await send(page, 'delta four');
    const question = page.locator(QUESTION);
    await question.locator('.choices button').first().waitFor();
    const id = await idOf(page);
    await send(page, '/stop');
    await question.locator('.body', { hasText: `Denied by /stop: write_file (${id}).` }).waitFor();
    expect(await question.locator('.choices').count()).toBe(0);
    await page.reload();
    await page.locator(QUESTION).locator('.body', { hasText: `Denied by /stop: write_file (${id}).` }).waitFor();
    expect(await page.locator('.choices').count()).toBe(0);
    expect(lines('delta.txt')).toEqual([]);
  });

  it('"Always in this chat" grants the tool: the next call in the conversation runs without asking', async () => {
    const page = await open('always-page');
    await send(page, 'delta one');
    const question = page.locator(QUESTION);
    await question.locator('.choices button', { hasText: 'Always in this chat' }).click();
    await page.locator('.msg.bot', { hasText: 'Done: wrote delta.txt' }).waitFor();
    await question.locator('.body', { hasText: ', and always in this chat.' }).waitFor();
    await send(page, 'delta two');
    await page.locator('.msg.bot', { hasText: 'Done: wrote delta.txt' }).nth(1).waitFor();
    expect(await page.locator(QUESTION).count()).toBe(1);
    expect(lines('delta.txt')).toEqual(['delta one', 'delta two']);
  });

  it('a press under a reply that has no such button is refused and decides nothing', async () => {
    const page = await open('no-button');
    await send(page, 'gamma three');
    await page.locator(QUESTION).locator('.choices button').first().waitFor();
    const replyId = await page.locator(QUESTION).getAttribute('data-reply-id');
    const status = await page.evaluate(async ([reply, command]) => (await fetch('/api/chat/no-button/presses', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ replyId: reply, command }),
    })).status, [replyId, '/approve all'] as const);
    expect(status).toBe(404);
    expect(await page.locator(QUESTION).locator('.choices button').count()).toBe(3);
    expect(lines('gamma.txt')).toEqual([]);
  });
});
