/**
 * Approvals end to end through the fake Telegram: a side-effecting `ask` tool (it appends a line
 * to a real file) is asked about in the chat; approve → written once and the turn goes on; deny →
 * not written and the model is told; expiry; a second decision changes nothing; "always in this
 * chat" survives a compaction, `/pins` lists it, `/revoke` and `/new` end it; `/stop` denies; `/approve all`
 * decides every question. Every decision (press, command, expiry, `/stop`) shows on its question, buttons gone.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { messageText } from '../../src/core/messages.js';
import type { SessionDetail } from '../../src/core/session-view.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import type { FakeHandler, FakeRequest } from '../fakes/openai-server.js';
import { createFileWriter } from '../helpers/files.js';
import type { Stack } from '../helpers/stack.js';
import { useTelegramFixture } from '../helpers/telegram-stack.js';
import { pollUntil } from '../helpers/waits.js';

/** The test's folder and `write_file`, a tool with a real effect there that asks first. */
const { tool: writeFile, lines, remove } = createFileWriter('chatgate-approvals-');
afterAll(remove);


const tg = useTelegramFixture();
const say = (text: string) => tg.telegram.pushMessage({ text });
const ask = (text: string): Promise<string> => tg.next(() => say(text));
const toolResults = (request: FakeRequest): string[] => request.messages.filter((m) => m.role === 'tool').map((m) => messageText(m));

/** The model: asked to write, it calls write_file once; after a tool result it answers with that result. */
function writer(file: string): FakeHandler {
  return (request) => {
    const last = request.messages.at(-1)!;
    if (last.role === 'tool') return { content: `Done: ${messageText(last)}` };
    return { toolCalls: [{ name: 'write_file', arguments: { file, text: messageText(last) }, id: `call_${request.index}` }] };
  };
}

async function start(file: string, env: Record<string, string> = {}, approvalTimeoutMs?: number): Promise<Stack> {
  return tg.start({ handler: writer(file), tools: [writeFile], env, worker: approvalTimeoutMs ? { approvalTimeoutMs } : {} });
}

/** The Telegram message id of the question `id` (its sendMessage answer). */
async function pollUntilMessageId(id: string): Promise<number> {
  let found: number | undefined;
  await pollUntil(() => {
    for (const [key, text] of tg.telegram.messages) if (text.includes('Approval needed') && text.includes(`(${id})`)) found = Number(key.split(':')[1]);
    return found !== undefined;
  });
  return found!;
}

/** Says `text`, waits for the approval question, and returns its id. */
async function asked(text: string): Promise<string> {
  const question = await ask(text);
  const id = /\(([a-z0-9]{6})\)/.exec(question)?.[1];
  expect(question, question).toContain('write_file');
  expect(id, question).toBeDefined();
  return id!;
}

/** The question `id` shows `decision` under its text and has no buttons left. */
async function expectDecided(id: string, decision: string): Promise<void> {
  const messageId = await pollUntilMessageId(id);
  await pollUntil(() => (tg.telegram.messageText(42, messageId) ?? '').endsWith(decision), { what: `question ${id} edited to show "${decision}"` });
  expect(tg.telegram.messageText(42, messageId)).toContain(`(${id})`);
  expect(tg.telegram.markupOf(42, messageId)).toBeUndefined();
}

describe('approvals of tool calls (Telegram)', () => {
  it('asks first; /approve writes the file once and the turn goes on; a second /approve changes nothing', async () => {
    const s = await start('a.txt');
    const id = await asked('hello file');
    expect(tg.sent().at(-1)).toContain('file: "a.txt"');
    expect(lines('a.txt')).toEqual([]);
    // The turn waits holding nothing: no lease, its message still in processing.
    const keys = sessionKeys('telegram:42', s.t.keyPrefix);
    // The question leaves before the job ends and gives the lease back: wait for that end.
    await pollUntil(async () => (await s.t.redis.exists(keys.lease)) === 0, { timeoutMs: 10_000, what: 'the lease released while the turn waits' });
    expect(await s.t.redis.llen(keys.processing)).toBe(1);

    const answers = tg.sent().length;
    say(`/approve ${id}`);
    await tg.until(() => tg.sent().slice(answers).some((text) => text.startsWith('Done: wrote a.txt')));
    expect(tg.sent().slice(answers)).toContain(`Approved by Ada: write_file (${id}).`);
    expect(lines('a.txt')).toEqual(['hello file']);
    expect(toolResults(s.agentRequests().at(-1)!)).toEqual(['wrote a.txt']);

    expect(await ask(`/approve ${id}`)).toMatch(/^Already decided — Approved by/);
    expect(lines('a.txt')).toEqual(['hello file']);
    const decisions = (await readTranscript(s.t.redis, keys)).filter((e) => e.type === 'approval');
    expect(decisions).toEqual([expect.objectContaining({ approvalId: id, tool: 'write_file', decision: 'approved', via: 'user', by: { userId: '42', userName: 'Ada' } })]);
  });

  it('inline keyboard: Approve is answered, the question edited to show it, its buttons gone; a second press changes nothing', async () => {
    await start('e.txt');
    const id = await asked('press it');
    const sent = tg.telegram.callsOf('sendMessage').at(-1)!;
    expect(sent.params.reply_markup).toEqual({ inline_keyboard: [[
      { text: 'Approve', callback_data: `/approve ${id}` }, { text: 'Always in this chat', callback_data: `/approve ${id} always` }, { text: 'Deny', callback_data: `/deny ${id}` },
    ]] });
    const messageId = await pollUntilMessageId(id);
    tg.telegram.pushCallbackQuery({ messageId, data: `/approve ${id}` });
    await tg.until(() => tg.sent().some((text) => text.startsWith('Done: wrote e.txt')));
    expect(tg.telegram.callsOf('answerCallbackQuery')[0]!.params).toMatchObject({ text: `Approved by Ada: write_file (${id}).`, show_alert: false });
    expect(tg.telegram.messageText(42, messageId)).toContain(`Approved by Ada: write_file (${id}).`);
    expect(tg.telegram.markupOf(42, messageId)).toBeUndefined();
    tg.telegram.pushCallbackQuery({ messageId, data: `/approve ${id}` });
    await tg.until(() => tg.telegram.callsOf('answerCallbackQuery').length === 2);
    expect(String(tg.telegram.callsOf('answerCallbackQuery')[1]!.params.text)).toMatch(/^Already decided/);
    expect(lines('e.txt')).toEqual(['press it']);
  });

  it('/approve all decides every question of the chat: both calls of the round run once, and their questions show it', async () => {
    await tg.start({
      tools: [writeFile],
      handler: (request) => {
        const last = request.messages.at(-1)!;
        if (last.role === 'tool') return { content: `Done: ${toolResults(request).join(' + ')}` };
        const text = messageText(last);
        return { toolCalls: [
          { name: 'write_file', arguments: { file: 'all.txt', text: `${text} 1` }, id: `call_${request.index}_a` },
          { name: 'write_file', arguments: { file: 'all.txt', text: `${text} 2` }, id: `call_${request.index}_b` },
        ] };
      },
    });
    const before = tg.sent().length;
    say('both');
    await tg.until(() => tg.sent().slice(before).filter((text) => text.includes('Approval needed')).length === 2);
    const ids = tg.sent().slice(before).filter((text) => text.includes('Approval needed')).map((text) => /\(([a-z0-9]{6})\)/.exec(text)![1]!);
    expect(lines('all.txt')).toEqual([]);
    const answers = tg.sent().length;
    say('/approve all');
    await tg.until(() => tg.sent().slice(answers).some((text) => text.startsWith('Done: wrote all.txt + wrote all.txt')));
    const answer = tg.sent().slice(answers).find((text) => text.startsWith('Approved by'))!;
    expect(answer.split('\n').sort()).toEqual(ids.map((id) => `Approved by Ada: write_file (${id}).`).sort());
    expect(lines('all.txt')).toEqual(['both 1', 'both 2']);
    for (const id of ids) await expectDecided(id, `Approved by Ada: write_file (${id}).`);
    expect(await ask('/approve all')).toBe('Nothing is waiting for your approval here.');
  });

  it('a message that arrives while a turn waits for approval waits as behind a running turn: it joins after the decided round', async () => {
    const s = await start('w.txt');
    const id = await asked('waiting');
    say('meanwhile');
    const keys = sessionKeys('telegram:42', s.t.keyPrefix);
    // Taken in, not answered: the waiting turn is still the session's.
    await pollUntil(async () => (await s.t.redis.llen(keys.inbox)) + (await s.t.redis.llen(keys.processing)) >= 2, { what: 'the second message taken in' });
    expect(s.agentRequests()).toHaveLength(1);
    const answers = tg.sent().length;
    say(`/approve ${id}`);
    // The default mode (steer): the message joins the resumed turn after the round's results, never inside it.
    await tg.until(() => tg.sent().slice(answers).some((text) => text.includes('Approval needed') && text.includes('meanwhile')));
    expect(lines('w.txt')).toEqual(['waiting']);
    const resumed = s.agentRequests()[1]!.messages.map((m) => `${m.role}:${messageText(m)}`).slice(1);
    expect(resumed).toEqual(['user:waiting', 'assistant:', 'tool:wrote w.txt', 'user:meanwhile']);
  });

  it('/deny: the file is not written and the model is told', async () => {
    const s = await start('b.txt');
    const id = await asked('deny me');
    const answers = tg.sent().length;
    say(`/deny ${id}`);
    await tg.until(() => tg.sent().slice(answers).some((text) => text.startsWith('Done: Error: the user denied')));
    expect(lines('b.txt')).toEqual([]);
    expect(toolResults(s.agentRequests().at(-1)!)[0]).toMatch(/^Error: the user denied this call of write_file; it was not run/);
    // Decided by a typed command, the question shows it and loses its buttons, as after a press.
    await expectDecided(id, `Denied by Ada: write_file (${id}).`);
  });

  it('a question nobody answers expires: not written, the model is told, a late /approve changes nothing', async () => {
    const s = await start('c.txt', {}, 1000);
    const id = await asked('too slow');
    const answers = tg.sent().length;
    await tg.until(() => tg.sent().slice(answers).some((text) => text.startsWith('Done: Error: this call of write_file was not run')));
    expect(toolResults(s.agentRequests().at(-1)!)[0]).toContain('did not approve it within 1 min');
    await expectDecided(id, `Expired: write_file (${id}) was not approved in time and did not run.`);
    expect(await ask(`/approve ${id}`)).toMatch(/^Already decided — Expired/);
    expect(lines('c.txt')).toEqual([]);
  });

  it('"always in this chat" survives a compaction and is listed by /pins; /revoke and /new make it ask again', async () => {
    const s = await start('d.txt');
    const id = await asked('first');
    const answers = tg.sent().length;
    say(`/approve ${id} always`);
    await tg.until(() => tg.sent().slice(answers).some((text) => text.startsWith('Done: wrote d.txt')));
    expect(await ask('/compact')).toMatch(/^Compacted|Nothing to compact/);
    expect(await ask('second')).toBe('Done: wrote d.txt');
    expect(lines('d.txt')).toEqual(['first', 'second']);
    expect(await ask('/pins')).toMatch(/Always approved in this chat[\s\S]*• write_file \(by Ada/);
    // The dashboard's session view (its API) shows the grant and the decision, after the compaction too.
    const detail = (await (await fetch(`${s.gateway.httpUrl}/api/sessions/${encodeURIComponent('telegram:42')}`)).json()) as SessionDetail;
    expect(detail.grants).toEqual([expect.objectContaining({ tool: 'write_file', by: { userId: '42', userName: 'Ada' } })]);
    expect(detail.decisions).toEqual(expect.arrayContaining([expect.objectContaining({ approvalId: id, tool: 'write_file', decision: 'approved', via: 'user', always: true, args: expect.stringContaining('first') })]));
    expect(await ask('/revoke write_file')).toBe('Revoked: write_file asks for approval again in this chat.');
    const third = await asked('third');
    expect(await ask('/stop')).toBe('Stopped.');
    await expectDecided(third, `Denied by /stop: write_file (${third}).`);
    expect(lines('d.txt')).toEqual(['first', 'second']);
    const grant = await asked('fourth');
    const before = tg.sent().length;
    say(`/approve ${grant} always`);
    await tg.until(() => tg.sent().slice(before).some((text) => text.startsWith('Done: wrote d.txt')));
    expect(await ask('/new')).toMatch(/^Started a fresh conversation/);
    await asked('fifth');
    expect(lines('d.txt')).toEqual(['first', 'second', 'fourth']);
    await pollUntil(async () => (await s.t.redis.hlen(sessionKeys('telegram:42', s.t.keyPrefix).grants)) === 0);
  });
});
