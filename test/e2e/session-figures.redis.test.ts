import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatShare } from '../../src/core/session-figures.js';
import type { SessionDetail, SessionPage } from '../../src/core/session-view.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import { launchChromium } from '../helpers/browser.js';
import { runChatgate, type CliResult } from '../helpers/cli-process.js';
import { prose } from '../helpers/histories.js';
import { isSummaryRequest, type Stack } from '../helpers/stack.js';
import { startTelegramStack } from '../helpers/telegram-stack.js';
import { waitUntil } from '../helpers/waits.js';

const SESSION = 'telegram:42';

/** The figures every surface must agree on. */
interface Figures { fill: string; window: number; compactions: number }

let telegram: FakeTelegramServer;
let stack: Stack;
let browser: Browser;

beforeAll(async () => {
  telegram = await startFakeTelegram();
  // The session runs on fake-model with an 8,000-token window, 1,000 reserved; the worker compacts at 30% of 7,000.
  stack = await startTelegramStack(telegram, {
    env: { CHATGATE_CONTEXT_WINDOW: '8000', CHATGATE_RESERVED_OUTPUT_TOKENS: '1000', CHATGATE_THRESHOLD: '0.3' },
    handler: (request) => ({ content: `Answer ${request.index}: ${prose(250, String(request.index))}` }),
  });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
  await telegram?.close();
});

const texts = () => telegram.callsOf('sendMessage').map((call) => String(call.params.text));
const number = (text: string) => Number(text.replace(/,/g, ''));

/** Runs the real CLI as its own process, configured with another model than the session's. */
function runCli(args: string[]): Promise<CliResult> {
  return runChatgate(args, {
    REDIS_URL: stack.t.url, CHATGATE_KEY_PREFIX: stack.t.keyPrefix,
    CHATGATE_QUEUE_PREFIX: stack.t.queuePrefix, OPENAI_BASE_URL: stack.llm.baseURL, OPENAI_API_KEY: 'test-key',
    CHATGATE_MODEL: 'gpt-4o', CHATGATE_SUMMARY_MODEL: 'gpt-4o-mini', CHATGATE_LOG_LEVEL: 'silent',
  });
}

describe('one session, the same figures on every surface', () => {
  it('shows the same fill, window and compaction count in /usage, the API, the dashboard and `chatgate sessions --json`', async () => {
    // Counted by the answers: a compaction also sends its one-line notice.
    const answered = (n: number) => waitUntil(telegram, 'call', () => texts().filter((t) => t.startsWith('Answer ')).length >= n);
    for (let i = 0; i < 8; i++) {
      telegram.pushMessage({ text: `question ${i}: ${prose(40, `q${i}`)}`, chat: { id: 42, type: 'private' } });
      await answered(i + 1);
    }
    await waitUntil(telegram, 'call', () => texts().some((t) => t.startsWith('Compacted the earlier conversation')));
    telegram.pushMessage({ text: '/usage', chat: { id: 42, type: 'private' } });
    await waitUntil(telegram, 'call', () => texts().some((t) => t.includes('Usage of this chat')));
    const usage = texts().find((t) => t.includes('Usage of this chat'))!;
    const context = /next request ≈ ([\d,]+) of ([\d,]+) tokens \(([\d.]+%); window ([\d,]+)/.exec(usage);
    expect(context, usage).not.toBeNull();
    const fromChat: Figures = { fill: context![3], window: number(context![4]), compactions: Number(/Compactions: (\d+)/.exec(usage)![1]) };
    expect(number(context![2])).toBe(7000);
    expect(fromChat.window).toBe(8000);
    expect(fromChat.compactions).toBeGreaterThanOrEqual(1);

    const api = (await (await fetch(`${stack.gateway.httpUrl}/api/sessions/${encodeURIComponent(SESSION)}`)).json()) as SessionDetail;
    const fromApi: Figures = { fill: formatShare(api.session.fill), window: api.session.contextWindow, compactions: api.session.compactions };

    const page = await browser.newPage();
    await page.goto(`${stack.gateway.httpUrl}/dashboard#session=${encodeURIComponent(SESSION)}`);
    const header = (await page.locator('#context').textContent()) ?? '';
    const shown = /\(([\d.]+%)\); window ([\d,]+)/.exec(header);
    expect(shown, header).not.toBeNull();
    const ledgerCompactions = await page.locator('#ledger tr').evaluateAll((rows) =>
      rows.find((row) => row.querySelector('th')?.textContent === 'compactions')?.querySelector('td')?.textContent ?? '');
    const rowFill = await page.locator(`tr[data-session="${SESSION}"] td`).nth(3).textContent();
    const fromDashboard: Figures = { fill: shown![1], window: number(shown![2]), compactions: Number(ledgerCompactions) };
    expect(rowFill).toBe(fromDashboard.fill);
    // One chart point per agent model call, and one marker per compaction that changed the projection.
    expect((await page.locator('#fill-chart .fill-line').getAttribute('points'))?.split(' ')).toHaveLength(stack.agentRequests().length);
    expect(await page.locator('#fill-chart .compaction-marker').count()).toBe(fromChat.compactions);
    expect(await page.locator('#fill-chart').textContent()).toMatch(/compress 30%.*hygiene 85%/);
    await page.close();

    const cli = await runCli(['sessions', '--json']);
    expect(cli.code, cli.stderr).toBe(0);
    const row = (JSON.parse(cli.stdout) as SessionPage).items.find((item) => item.id === SESSION)!;
    const fromCli: Figures = { fill: formatShare(row.fill), window: row.contextWindow, compactions: row.compactions };
    expect(row.model).toBe('fake-model');

    expect({ api: fromApi, dashboard: fromDashboard, cli: fromCli }).toEqual({ api: fromChat, dashboard: fromChat, cli: fromChat });
  });

  it('`chatgate compact` from a differently configured terminal summarises with the session\'s summary model', async () => {
    const before = stack.llm.requests.filter(isSummaryRequest).length;
    const cli = await runCli(['compact', SESSION]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/telegram:42: (compacted|fallback|pruned), [\d,]+ → [\d,]+ tokens/);
    const summaries = stack.llm.requests.filter(isSummaryRequest).slice(before);
    expect(summaries.map((request) => request.model)).toEqual(['fake-model']);
  });

  it('/reset is a reset, not a compaction: message counts stay right and the chart draws it apart', async () => {
    const detail = async () => (await (await fetch(`${stack.gateway.httpUrl}/api/sessions/${encodeURIComponent(SESSION)}`)).json()) as SessionDetail;
    const before = await detail();
    const sent = telegram.callsOf('sendMessage').length;
    telegram.pushMessage({ text: '/reset', chat: { id: 42, type: 'private' } });
    await telegram.waitForCall('sendMessage', sent + 1);
    const reset = await detail();
    expect(reset.session).toMatchObject({ messages: before.session.messages, compactions: before.session.compactions });
    expect(reset.ledger.resets).toBe(1);
    expect(reset.resets).toEqual([expect.objectContaining({ removedMessages: before.activity.contextMessages })]);
    telegram.pushMessage({ text: 'a fresh start', chat: { id: 42, type: 'private' } });
    await telegram.waitForCall('sendMessage', sent + 2);
    const after = await detail();
    expect(after.session.messages).toBe(before.session.messages + 2);
    expect(after.fillHistory.at(-1)!.tokens).toBeLessThan(before.fillHistory.at(-1)!.tokens);
    const page = await browser.newPage();
    await page.goto(`${stack.gateway.httpUrl}/dashboard#session=${encodeURIComponent(SESSION)}`);
    await page.locator('#fill-chart .reset-marker').waitFor({ state: 'attached' });
    expect(await page.locator('#fill-chart .compaction-marker').count()).toBe(after.session.compactions);
    await page.close();
  });
});
