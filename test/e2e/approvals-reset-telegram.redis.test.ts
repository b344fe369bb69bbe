/**
 * `/reset` (`/new`) while a turn waits for approval, end to end through the fake Telegram: the question
 * is cancelled (shown on it, its buttons gone), the waiting turn ends with the old conversation, and the
 * next message is answered at once by a normal turn whose request holds nothing of the old round. A
 * gateway that dies between cancelling and resetting leaves a sane state: the questions denied, the context kept.
 * `chatgate reset` does the same from the CLI, which holds no channel: a press on the question's stale
 * buttons is told it was cancelled and closes them.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/cli.js';
import type { CliIo } from '../../src/cli/context.js';
import { createApprovalStore } from '../../src/approvals/store.js';
import { messageText } from '../../src/core/messages.js';
import { denyPending } from '../../src/gateway/approval-commands.js';
import { createSilentLogger } from '../../src/log.js';
import { createTurnProducer } from '../../src/queue/producer.js';
import { sessionKeys } from '../../src/redis/keys.js';
import type { FakeHandler } from '../fakes/openai-server.js';
import { createFileWriter } from '../helpers/files.js';
import type { Stack } from '../helpers/stack.js';
import { useTelegramFixture } from '../helpers/telegram-stack.js';
import { pollUntil } from '../helpers/waits.js';

const { tool: writeFile, lines, remove } = createFileWriter('chatgate-approvals-reset-');
afterAll(remove);

const tg = useTelegramFixture();
const say = (text: string) => tg.telegram.pushMessage({ text });
const ask = (text: string): Promise<string> => tg.next(() => say(text));

/** Well below the approval expiry (10 min): a message that waits for it fails the test. */
const ANSWER_WAIT_MS = 20_000;

/** The model: "write …" calls write_file (which asks first); anything else gets a plain answer. */
const model: FakeHandler = (request) => {
  const last = request.messages.at(-1)!;
  const text = messageText(last);
  if (last.role === 'tool') return { content: `Done: ${text}` };
  if (text.startsWith('write')) return { toolCalls: [{ name: 'write_file', arguments: { file: 'r.txt', text }, id: `call_${request.index}` }] };
  return { content: `Answer: ${text}` };
};

/** Says `text`, waits for the approval question and for its turn to let the session go, and returns the question's id. */
async function asked(text: string, s: Stack): Promise<string> {
  const question = await ask(text);
  const id = /\(([a-z0-9]{6})\)/.exec(question)?.[1];
  expect(id, question).toBeDefined();
  await pollUntil(async () => (await s.t.redis.exists(sessionKeys('telegram:42', s.t.keyPrefix).lease)) === 0, { what: 'the lease released while the turn waits' });
  return id!;
}

/** The Telegram message that asked question `id`. */
function questionMessageId(id: string): number | undefined {
  for (const [key, text] of tg.telegram.messages) if (text.includes('Approval needed') && text.includes(`(${id})`)) return Number(key.split(':')[1]);
  return undefined;
}

describe('/reset while a turn waits for approval (Telegram)', () => {
  it('cancels the question, ends the waiting turn, and the next message is answered at once from the fresh context', async () => {
    const s = await tg.start({ handler: model, tools: [writeFile] });
    const keys = sessionKeys('telegram:42', s.t.keyPrefix);
    const id = await asked('write this', s);

    expect(await ask('/reset')).toBe('Started a fresh conversation (1 message left the context; the transcript keeps it). The tool call waiting for approval was cancelled.');
    const messageId = questionMessageId(id)!;
    await pollUntil(() => (tg.telegram.messageText(42, messageId) ?? '').endsWith(`Cancelled by /reset: write_file (${id}).`), { what: 'the question shows it was cancelled' });
    expect(tg.telegram.markupOf(42, messageId)).toBeUndefined();

    const before = tg.sent().length;
    say('plain question');
    await vi.waitFor(() => expect(tg.sent().slice(before)).toContain('Answer: plain question'), { timeout: ANSWER_WAIT_MS, interval: 50 });
    // The old round left no trace: no call, no result, not the message that asked for it.
    const request = s.agentRequests().at(-1)!;
    expect(request.messages.slice(1).map((m) => `${m.role}:${messageText(m)}`)).toEqual(['user:plain question']);
    expect(s.agentRequests()).toHaveLength(2);
    expect(tg.sent().slice(before).filter((text) => text.includes('Approval needed'))).toEqual([]);
    expect(lines('r.txt')).toEqual([]);
    await pollUntil(async () => (await s.t.redis.llen(keys.processing)) === 0 && (await s.t.redis.exists(keys.steps)) === 0, { what: 'the waiting turn gone' });
  });

  it('/new is /reset: a later question is asked and decided as usual', async () => {
    const s = await tg.start({ handler: model, tools: [writeFile] });
    await asked('write one', s);
    expect(await ask('/new')).toMatch(/The tool call waiting for approval was cancelled\.$/);
    const id = await asked('write two', s);
    const before = tg.sent().length;
    say(`/approve ${id}`);
    await vi.waitFor(() => expect(tg.sent().slice(before)).toContain('Done: wrote r.txt'), { timeout: ANSWER_WAIT_MS, interval: 50 });
    expect(lines('r.txt')).toEqual(['write two']);
    const resumed = s.agentRequests().at(-1)!.messages.slice(1).map((m) => `${m.role}:${messageText(m)}`);
    expect(resumed).toEqual(['user:write two', 'assistant:', 'tool:wrote r.txt']);
  });

  it('a gateway that dies after cancelling, before the reset: the turn is told its call was cancelled, and /reset again starts fresh', async () => {
    const s = await tg.start({ handler: model, tools: [writeFile] });
    await asked('write three', s);
    // What `/reset` does first, and nothing after it (the gateway died holding the lease, which expires).
    const producer = createTurnProducer({ redis: s.t.redis }, { keyPrefix: s.t.keyPrefix, ...s.t.names, queueShards: s.config.redis.queueShards });
    try {
      const before = tg.sent().length;
      expect(await denyPending({ store: createApprovalStore(s.t.redis, { keyPrefix: s.t.keyPrefix }), producer, logger: createSilentLogger() }, 'telegram:42', 'reset')).toBe(1);
      await vi.waitFor(() => expect(tg.sent().slice(before)).toContain('Done: Error: this call of write_file was not run: the user started a fresh conversation (/reset), which cancelled it.'), { timeout: ANSWER_WAIT_MS, interval: 50 });
    } finally {
      await producer.close();
    }
    expect(lines('r.txt')).not.toContain('write three');
    expect(await ask('/reset')).toBe('Started a fresh conversation (4 messages left the context; the transcript keeps them).');
    expect(await ask('plain again')).toBe('Answer: plain again');
    expect(s.agentRequests().at(-1)!.messages.slice(1).map((m) => `${m.role}:${messageText(m)}`)).toEqual(['user:plain again']);
  });

  it('chatgate reset cancels the question too: the next message is answered at once, a press on the stale buttons closes them', async () => {
    const s = await tg.start({ handler: model, tools: [writeFile] });
    const keys = sessionKeys('telegram:42', s.t.keyPrefix);
    const id = await asked('write four', s);

    const out: string[] = [];
    const io: CliIo = { out: (line) => out.push(line), err: (line) => out.push(line), env: { ...s.t.env, OPENAI_BASE_URL: s.llm.baseURL, OPENAI_API_KEY: 'test-key', CHATGATE_MODEL: 'fake-model', CHATGATE_CONTEXT_WINDOW: '16000', CHATGATE_LOG_LEVEL: 'silent' } };
    expect(await runCli(['node', 'chatgate', 'reset', 'telegram:42'], { io }), out.join('\n')).toBe(0);
    expect(out.join('\n')).toBe('telegram:42: reset — 1 message removed from the projection, fresh compaction state; 1 tool call waiting for approval cancelled (the turn that asked ended); transcript, notes and usage kept');

    const before = tg.sent().length;
    say('plain question');
    await vi.waitFor(() => expect(tg.sent().slice(before)).toContain('Answer: plain question'), { timeout: ANSWER_WAIT_MS, interval: 50 });
    expect(s.agentRequests().at(-1)!.messages.slice(1).map((m) => `${m.role}:${messageText(m)}`)).toEqual(['user:plain question']);
    expect(lines('r.txt')).not.toContain('write four');
    await pollUntil(async () => (await s.t.redis.llen(keys.processing)) === 0 && (await s.t.redis.exists(keys.steps)) === 0, { what: 'the waiting turn gone' });

    // The CLI could not touch the question: its buttons stay until pressed.
    const messageId = questionMessageId(id)!;
    expect(tg.telegram.markupOf(42, messageId)).toBeDefined();
    tg.telegram.pushCallbackQuery({ messageId, data: `/approve ${id}` });
    await tg.until(() => tg.telegram.callsOf('answerCallbackQuery').length === 1);
    expect(tg.telegram.callsOf('answerCallbackQuery')[0]!.params).toMatchObject({ text: `Already decided — Cancelled by /reset: write_file (${id}).` });
    await pollUntil(() => tg.telegram.markupOf(42, messageId) === undefined, { what: 'the stale buttons closed' });
    expect(tg.telegram.messageText(42, messageId)).toMatch(new RegExp(`Cancelled by /reset: write_file \\(${id}\\)\\.$`));
    expect(lines('r.txt')).not.toContain('write four');
  });
});
