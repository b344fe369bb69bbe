import { describe, expect, it } from 'vitest';
import { readUsage } from '../../src/redis/usage.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { messageText } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { isSummaryRequest, type Stack } from '../helpers/stack.js';
import { useTelegramFixture } from '../helpers/telegram-stack.js';
import type { FakeHandler } from '../fakes/openai-server.js';

const tg = useTelegramFixture();

async function start(handler: FakeHandler, env: Record<string, string> = {}): Promise<Stack> {
  return tg.start({ handler, env });
}

const waitUntil = tg.until;

/** `chatgate_model_calls_total{channel="telegram"}` as the gateway's /metrics exposes it. */
async function modelCalls(s: Stack): Promise<number> {
  const text = await (await fetch(`${s.gateway.httpUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('chatgate_model_calls_total{') && l.includes('channel="telegram"'));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

const texts = () => tg.telegram.callsOf('sendMessage').map((call) => String(call.params.text));
const say = (text: string, from = 42) => tg.telegram.pushMessage({ text, from: { id: from, is_bot: false, first_name: 'Ada' }, chat: { id: from, type: 'private', first_name: 'Ada' } });

describe('gateway with Telegram', () => {
  it('answers a message end to end, registers the chat commands and counts the turn in /metrics', async () => {
    const s = await start(() => ({ content: 'Hello **Ada**!' }));
    const before = await modelCalls(s);
    say('hi there');
    const sent = await tg.telegram.waitForCall('sendMessage');
    expect(sent.params).toMatchObject({ chat_id: '42', text: 'Hello <b>Ada</b>!', parse_mode: 'HTML' });
    expect(s.agentRequests().at(-1)?.messages.at(-1)).toMatchObject({ role: 'user' });
    expect(tg.telegram.callsOf('setMyCommands')[0].params.commands).toEqual(expect.arrayContaining([expect.objectContaining({ command: 'usage' })]));
    expect(tg.telegram.callsOf('sendChatAction').length).toBeGreaterThan(0);
    expect(await modelCalls(s)).toBe(before + 1);
  });

  it('splits a long reply at the 4096 limit and honours a 429', async () => {
    const long = Array.from({ length: 300 }, (_, i) => `Line ${i}: ${'word '.repeat(8)}`).join('\n');
    await start(() => ({ content: long }));
    tg.telegram.failNext('sendMessage', { errorCode: 429, description: 'Too Many Requests: retry after 1', retryAfterSeconds: 1 });
    say('tell me everything');
    await waitUntil(() => texts().some((t) => t.includes('Line 299:')));
    const calls = tg.telegram.callsOf('sendMessage');
    const delivered = texts().slice(1);
    expect(new Set(delivered).size).toBe(delivered.length);
    expect(delivered.every((t) => t.length <= 4096)).toBe(true);
    expect(delivered.join('\n').replace(/\n+/g, '\n')).toContain('Line 299:');
    expect(calls[1].atMs - calls[0].atMs).toBeGreaterThanOrEqual(900);
  });

  it('answers /usage and /compact with real figures', async () => {
    const s = await start((request) => ({ content: `Answer ${request.index}. ${'detail of the answer '.repeat(60)}` }));
    for (let i = 0; i < 10; i++) {
      say(`question ${i}`);
      await tg.telegram.waitForCall('sendMessage', i + 1);
    }
    const sessionId = 'telegram:42';
    const usage = await readUsage(s.t.redis, sessionKeys(sessionId, s.t.keyPrefix));
    say('/usage');
    await tg.telegram.waitForCall('sendMessage', 11);
    expect(texts()[10]).toContain(`${usage.promptTokens.toLocaleString('en-US')} in`);
    expect(texts()[10]).toContain('10 model calls');
    say('/compact the questions');
    await tg.telegram.waitForCall('sendMessage', 12);
    const match = /Compacted \(focus: the questions\): ([\d,]+) → ([\d,]+) tokens/.exec(texts()[11]);
    expect(match, texts()[11]).not.toBeNull();
    const [tokensBefore, tokensAfter] = [match![1], match![2]].map((n) => Number(n.replace(/,/g, '')));
    expect(tokensAfter).toBeLessThan(tokensBefore);
    const summaryCall = s.llm.requests.find((r) => isSummaryRequest(r));
    expect(JSON.stringify(summaryCall?.messages)).toContain('the questions');
    const after = await readUsage(s.t.redis, sessionKeys(sessionId, s.t.keyPrefix));
    expect(after).toMatchObject({ summaryCalls: 1, summaryPromptTokens: summaryCall!.promptTokens });
    say('/status');
    await tg.telegram.waitForCall('sendMessage', 13);
    expect(texts()[12]).toMatch(/Session: telegram:42, .* old, \d+ messages in context/);
    expect(texts()[12]).toContain('idle; 0 of your messages waiting; no turn queued');
  });

  it('processes a re-delivered update once, refuses unlisted users and over-size messages without the LLM', async () => {
    const s = await start(() => ({ content: 'ok' }), { CHATGATE_ALLOW_TELEGRAM: '42', CHATGATE_MAX_MESSAGE_CHARS: '100' });
    const { messageId } = say('once please');
    tg.telegram.pushUpdate({ message: { message_id: messageId, date: Math.floor(Date.now() / 1000), text: 'once please', from: { id: 42, is_bot: false, first_name: 'Ada' }, chat: { id: 42, type: 'private' } } });
    say('let me in', 99);
    say('x'.repeat(500));
    // The second message waits for the first answer, or both could be answered in one turn.
    await waitUntil(() => tg.telegram.callsOf('sendMessage').some((c) => c.params.chat_id === '42' && c.params.text === 'ok'));
    say('and now a second one');
    // Turns of one chat run in arrival order: once the second message is answered, a duplicate turn would have been too.
    await waitUntil(() => tg.telegram.callsOf('sendMessage').filter((c) => c.params.chat_id === '42' && c.params.text === 'ok').length >= 2);
    await waitUntil(() => texts().some((t) => t.includes('the limit is 100')) && texts().some((t) => /not authorised/.test(t)));
    const all = tg.telegram.callsOf('sendMessage');
    expect(all.filter((c) => c.params.chat_id === '42' && c.params.text === 'ok')).toHaveLength(2);
    expect(all.find((c) => c.params.chat_id === '99')?.params.text).toMatch(/not authorised/);
    expect(texts().some((t) => t.includes('the limit is 100'))).toBe(true);
    expect(s.agentRequests()).toHaveLength(2);
  });

  it('rate-limits a user with a clear reply, and answers /help and /pins (which do not count)', async () => {
    const s = await start((request) => (request.messages.some((m) => m.role === 'tool')
      ? { content: 'Noted.' }
      : messageText(request.messages.at(-1)!).includes('remember')
        ? { toolCalls: [{ name: 'remember', arguments: { key: 'city', note: 'Ada lives in Lisbon' } }] }
        : { content: 'ok' }), { CHATGATE_RATE_LIMIT_PER_MINUTE: '3' });
    say('please remember my city');
    await waitUntil(() => texts().includes('Noted.'));
    say('/pins');
    await waitUntil(() => texts().some((t) => t.includes('Notes')));
    expect(texts().find((t) => t.includes('Notes'))).toContain('city: Ada lives in Lisbon');
    say('/help');
    await waitUntil(() => texts().some((t) => t.includes('/compact [focus]')));
    for (const text of ['second', 'third']) {
      const before = texts().length;
      say(text);
      await waitUntil(() => texts().length > before);
    }
    say('one too many');
    await waitUntil(() => texts().some((t) => t.includes('faster than 3 a minute')));
    expect(s.agentRequests().some((r) => JSON.stringify(r.messages).includes('one too many'))).toBe(false);
  });

  it('/reset starts a fresh context and keeps the transcript', async () => {
    const s = await start(() => ({ content: 'ok' }));
    for (let i = 0; i < 3; i++) {
      say(`message ${i}`);
      await tg.telegram.waitForCall('sendMessage', i + 1);
    }
    say('/reset');
    await tg.telegram.waitForCall('sendMessage', 4);
    expect(texts()[3]).toMatch(/Started a fresh conversation \(6 messages left the context; the transcript keeps them\)/);
    say('/status');
    await tg.telegram.waitForCall('sendMessage', 5);
    expect(texts()[4]).toContain('0 messages in context');
    const transcript = await readTranscript(s.t.redis, sessionKeys('telegram:42', s.t.keyPrefix));
    expect(transcript.filter((e) => e.type === 'message' && e.message.role === 'user')).toHaveLength(3);
  });
});
