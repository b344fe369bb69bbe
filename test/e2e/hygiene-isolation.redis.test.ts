/**
 * Chats do not wait for each other: a Telegram message is acknowledged once it is durable, and one
 * session's hygiene compaction (a slow summary) never holds another chat's message or reply.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { sessionKeys } from '../../src/redis/keys.js';
import { readUsage } from '../../src/redis/usage.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import type { FakeReply } from '../fakes/openai-server.js';
import { prose } from '../helpers/histories.js';
import { isSummaryRequest, type Stack } from '../helpers/stack.js';
import { startTelegramStack } from '../helpers/telegram-stack.js';
import { waitUntil } from '../helpers/waits.js';

let telegram: FakeTelegramServer;
let stack: Stack;

afterEach(async () => {
  await stack.close();
  await telegram.close();
});

describe('gateway hygiene and other chats', () => {
  it('answers chat B while chat A waits for its hygiene summary; A is answered after it', async () => {
    telegram = await startFakeTelegram();
    let release: (reply: FakeReply) => void = () => undefined;
    const held = new Promise<FakeReply>((resolve) => { release = resolve; });
    // As in hygiene.redis.test.ts: only hygiene (85% of 8,000) can compact; its summary is held until released.
    stack = await startTelegramStack(telegram, {
      env: { CHATGATE_CONTEXT_WINDOW: '8000', CHATGATE_THRESHOLD: '0.8' },
      handler: (request) => ({ content: `Answer ${request.index}: ${prose(1000, String(request.index))}` }),
      summary: () => ({ hold: held }),
    });
    const say = (chatId: number, text: string) => telegram.pushMessage({ text, chat: { id: chatId, type: 'private' }, from: { id: chatId, is_bot: false, first_name: `U${chatId}` } });
    const repliesTo = (chatId: number) => telegram.callsOf('sendMessage').filter((c) => Number(c.params.chat_id) === chatId && String(c.params.text).startsWith('Answer '));
    const replied = (chatId: number, n: number) => waitUntil(telegram, 'call', () => repliesTo(chatId).length >= n);
    for (let i = 0; i < 6; i++) {
      say(42, `question ${i}: ${prose(80, `q${i}`)}`);
      await replied(42, i + 1);
    }
    say(42, 'what next?');
    await stack.llm.waitForRequest(isSummaryRequest);
    const aUpdate = telegram.pendingUpdateIds().at(-1)!;

    say(43, 'hello from B');
    await replied(43, 1);
    // A's message was acknowledged (confirmed to Telegram) though its summary is still running, and
    // A has had no answer yet: its turn waits for its own compaction.
    expect(telegram.pendingUpdateIds()).not.toContain(aUpdate);
    expect(repliesTo(42)).toHaveLength(6);

    release({ content: 'Goal: help the user. Active state: conversation summarised.' });
    await replied(42, 7);
    const usage = await readUsage(stack.t.redis, sessionKeys('telegram:42', stack.t.keyPrefix));
    expect(usage.compactions).toEqual({ 'hygiene:compacted': 1 });
  });
});
