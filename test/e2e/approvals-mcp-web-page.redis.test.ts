/**
 * The "done when", as an operator runs it: real `chatgate gateway` and `chatgate worker`
 * processes, CHATGATE_MCP_CONFIG naming the real @modelcontextprotocol/server-filesystem on one
 * folder, and the web chat page in headless Chromium. The model calls `mcp__filesystem__write_file`
 * (side-effecting, so it asks by default): the page shows the question with buttons; Approve writes
 * the file, once, and the turn goes on; Deny writes nothing and the model is told.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageText } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { launchChromium, openChat, sendChat } from '../helpers/browser.js';
import { spawnChatgate, stopChatgate, type ChatgateProcess } from '../helpers/cli-process.js';
import { startModelsFront } from '../helpers/cli-worker.js';
import { mcpServerEntry } from '../helpers/mcp.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const PROCESS_TIMEOUT_MS = 120_000;
const QUESTION = '.msg.bot:has-text("Approval needed")';

describe('an MCP write approved in the web chat (real processes, real filesystem server)', () => {
  let t: TestRedis;
  let dir: string;
  let llm: FakeOpenAI;
  let front: { baseURL: string; close(): Promise<void> };
  let gateway: ChatgateProcess | undefined;
  let worker: ChatgateProcess | undefined;
  let browser: Browser | undefined;
  let origin: string;

  beforeAll(async () => {
    t = createTestRedis();
    dir = mkdtempSync(join(tmpdir(), 'cg-mcp-approve-'));
    const config = join(dir, 'chatgate.mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { filesystem: { command: process.execPath, args: [mcpServerEntry('server-filesystem'), dir] } } }));
    // Asked to write `<name>`, the model writes `<name>.txt` in the folder; after the tool's result it answers with it.
    llm = await startFakeOpenAI((request) => {
      const last = request.messages.at(-1)!;
      if (last.role === 'tool') return { content: `Done: ${messageText(last)}` };
      const name = messageText(last).split(' ').at(-1)!;
      return { toolCalls: [{ name: 'mcp__filesystem__write_file', arguments: { path: join(dir, `${name}.txt`), content: `written for ${name}` }, id: `call_${request.index}` }] };
    });
    front = await startModelsFront(llm.baseURL);
    const env = {
      ...t.env, OPENAI_BASE_URL: front.baseURL, OPENAI_API_KEY: 'test-key', CHATGATE_MODEL: 'gpt-4o-mini', CHATGATE_CONTEXT_WINDOW: '16000',
      CHATGATE_MCP_CONFIG: config, CHATGATE_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'warn', CHATGATE_RATE_LIMIT_PER_MINUTE: '0',
    };
    gateway = spawnChatgate(['gateway'], env);
    worker = spawnChatgate(['worker'], env);
    ({ origin } = await gateway.ready());
    await worker.ready();
    browser = await launchChromium();
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await stopChatgate(worker);
    await stopChatgate(gateway);
    await front?.close();
    await llm?.close();
    await t?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const ask = async (conversation: string, text: string): Promise<Page> => {
    const page = await openChat(browser!, `${origin}/chat?c=${conversation}`);
    await sendChat(page, text);
    await page.locator(QUESTION).locator('.choices button').first().waitFor({ timeout: 30_000 });
    expect(await page.locator(QUESTION).locator('.body').textContent()).toContain('mcp__filesystem__write_file');
    return page;
  };
  const toolResults = async (conversation: string) => (await readTranscript(t.redis, sessionKeys(`web:${conversation}`, t.keyPrefix)))
    .filter((entry) => entry.type === 'message' && (entry as { message?: { role?: string } }).message?.role === 'tool');

  it('Approve writes the file once and the turn goes on', async () => {
    const page = await ask('mcp-approve', 'please write alpha');
    expect(existsSync(join(dir, 'alpha.txt'))).toBe(false);
    await page.locator(QUESTION).locator('.choices button', { hasText: /^Approve$/ }).click();
    await page.locator('.msg.bot', { hasText: 'Done: Successfully wrote to' }).waitFor({ timeout: 30_000 });
    await page.locator(QUESTION).locator('.body', { hasText: 'Approved by web user: mcp__filesystem__write_file' }).waitFor();
    expect(await page.locator(QUESTION).locator('.choices').count()).toBe(0);
    expect(readFileSync(join(dir, 'alpha.txt'), 'utf8')).toBe('written for alpha');
    // One call, one result: the approved call ran once.
    expect(await toolResults('mcp-approve')).toHaveLength(1);
    expect(llm.requests.filter((request) => request.messages.at(-1)?.role === 'tool')).toHaveLength(1);
  });

  it('Deny writes nothing and the model is told', async () => {
    const page = await ask('mcp-deny', 'please write beta');
    await page.locator(QUESTION).locator('.choices button', { hasText: 'Deny' }).click();
    await page.locator('.msg.bot', { hasText: 'Done: Error: the user denied this call of mcp__filesystem__write_file' }).waitFor({ timeout: 30_000 });
    expect(existsSync(join(dir, 'beta.txt'))).toBe(false);
  });
});
