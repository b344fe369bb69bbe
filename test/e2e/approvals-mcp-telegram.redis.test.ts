/**
 * The real `@modelcontextprotocol/server-filesystem` (stdio) behind approvals, through the fake
 * Telegram: `mcp__filesystem__write_file` is side-effecting, so it asks (reading is `auto`); Approve
 * on the inline keyboard writes the file once, a second press changes nothing, and the question
 * shows the decision without buttons; a question nobody answers expires, writes nothing, and shows it.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { messageText } from '../../src/core/messages.js';
import type { FakeRequest } from '../fakes/openai-server.js';
import { mcpServerEntry, mcpServers } from '../helpers/mcp.js';
import { useTelegramFixture } from '../helpers/telegram-stack.js';
import { pollUntil } from '../helpers/waits.js';

const dir = mkdtempSync(join(tmpdir(), 'chatgate-mcp-telegram-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tg = useTelegramFixture();
const say = (text: string) => tg.telegram.pushMessage({ text });
const toolResults = (request: FakeRequest): string[] => request.messages.filter((m) => m.role === 'tool').map((m) => messageText(m));

/** Asked `<name> <text>`, the model writes `<text>` to `<name>.txt` in the folder; after a result it answers with it. */
async function start(approvalTimeoutMs?: number) {
  return tg.start({
    handler: (request) => {
      const last = request.messages.at(-1)!;
      if (last.role === 'tool') return { content: `Done: ${messageText(last)}` };
      const [name, ...words] = messageText(last).split(' ');
      return { toolCalls: [{ name: 'mcp__filesystem__write_file', arguments: { path: join(dir, `${name}.txt`), content: words.join(' ') }, id: `call_${request.index}` }] };
    },
    worker: { mcpServers: mcpServers({ filesystem: { command: process.execPath, args: [mcpServerEntry('server-filesystem'), dir] } }), ...(approvalTimeoutMs ? { approvalTimeoutMs } : {}) },
  });
}

/** Says `text` and resolves with the question's approval id and Telegram message id. */
async function asked(text: string): Promise<{ id: string; messageId: number }> {
  const before = tg.sent().length;
  say(text);
  await tg.until(() => tg.sent().slice(before).some((sent) => sent.includes('Approval needed')));
  const id = /\(([a-z0-9]{6})\)/.exec(tg.sent().slice(before).find((sent) => sent.includes('Approval needed'))!)![1]!;
  const key = [...tg.telegram.messages].find(([, sent]) => sent.includes('Approval needed') && sent.includes(`(${id})`))![0];
  return { id, messageId: Number(key.split(':')[1]) };
}

describe('approvals of the real filesystem MCP server (Telegram)', () => {
  it('Approve writes the file once, a second press changes nothing, and the question shows it without buttons', { timeout: 60_000 }, async () => {
    const s = await start();
    const { id, messageId } = await asked('alpha hello from telegram');
    expect(tg.sent().find((sent) => sent.includes(`(${id})`))).toContain('mcp__filesystem__write_file');
    expect(existsSync(join(dir, 'alpha.txt'))).toBe(false);
    tg.telegram.pushCallbackQuery({ messageId, data: `/approve ${id}` });
    await tg.until(() => tg.sent().some((sent) => sent.startsWith('Done: Successfully wrote')));
    expect(readFileSync(join(dir, 'alpha.txt'), 'utf8')).toBe('hello from telegram');
    expect(tg.telegram.messageText(42, messageId)).toMatch(new RegExp(`Approved by Ada: mcp__filesystem__write_file \\(${id}\\)\\.$`));
    expect(tg.telegram.markupOf(42, messageId)).toBeUndefined();
    tg.telegram.pushCallbackQuery({ messageId, data: `/approve ${id}` });
    await tg.until(() => tg.telegram.callsOf('answerCallbackQuery').length === 2);
    expect(String(tg.telegram.callsOf('answerCallbackQuery')[1]!.params.text)).toMatch(/^Already decided/);
    expect(s.agentRequests().filter((request) => toolResults(request).some((text) => text.startsWith('Successfully wrote')))).toHaveLength(1);
  });

  it('a question nobody answers expires: nothing is written, the model is told, and the question shows it', { timeout: 60_000 }, async () => {
    const s = await start(1000);
    const { id, messageId } = await asked('beta too late');
    await tg.until(() => tg.sent().some((sent) => sent.startsWith('Done: Error: this call of mcp__filesystem__write_file was not run')));
    expect(toolResults(s.agentRequests().at(-1)!)[0]).toContain('did not approve it within 1 min');
    await pollUntil(() => tg.telegram.markupOf(42, messageId) === undefined, { what: 'the expired question without buttons' });
    expect(tg.telegram.messageText(42, messageId)).toContain(`Expired: mcp__filesystem__write_file (${id}) was not approved in time and did not run.`);
    expect(existsSync(join(dir, 'beta.txt'))).toBe(false);
  });
});
