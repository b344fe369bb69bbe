import { afterEach, describe, expect, it } from 'vitest';
import { messageText } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { readUsage } from '../../src/redis/usage.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import { prose } from '../helpers/histories.js';
import type { Stack } from '../helpers/stack.js';
import { startTelegramStack } from '../helpers/telegram-stack.js';
import { waitUntil } from '../helpers/waits.js';

let telegram: FakeTelegramServer;
let stack: Stack;

afterEach(async () => {
  await stack.close();
  await telegram.close();
});

describe('gateway hygiene at 85%', () => {
  it('compacts an idle session over the line before its next turn, so the worker request is under it', async () => {
    telegram = await startFakeTelegram();
    // 8,000-token window; the worker compacts at 80% (6,400) so that only hygiene (85%, 6,800) can act here.
    stack = await startTelegramStack(telegram, {
      env: { CHATGATE_CONTEXT_WINDOW: '8000', CHATGATE_THRESHOLD: '0.8' },
      handler: (request) => ({ content: `Answer ${request.index}: ${prose(1000, String(request.index))}` }),
    });
    const say = (text: string) => telegram.pushMessage({ text, chat: { id: 42, type: 'private' } });
    // A reply may arrive in several chunks: count the replies by their first chunk.
    const replied = (n: number) => waitUntil(telegram, 'call', () => telegram.callsOf('sendMessage').filter((c) => String(c.params.text).startsWith('Answer ')).length >= n);
    // Six exchanges of ~1,100 tokens: every model call stays under 6,400, the session ends over 6,800.
    for (let i = 0; i < 6; i++) {
      say(`question ${i}: ${prose(80, `q${i}`)}`);
      await replied(i + 1);
    }
    const before = stack.agentRequests().length;
    say('what next?');
    const request = await stack.llm.waitForRequest(() => stack.agentRequests().length > before);
    await replied(7);

    const keys = sessionKeys('telegram:42', stack.t.keyPrefix);
    const usage = await readUsage(stack.t.redis, keys);
    expect(usage.compactions).toEqual({ 'hygiene:compacted': 1 });
    expect(stack.agentRequests()[before]).toBe(request);
    expect(request.promptTokens).toBeLessThan(6400);
    // The hygiene compaction is recorded before the message that triggered it entered the projection.
    const transcript = await readTranscript(stack.t.redis, keys);
    const compactionAt = transcript.findIndex((e) => e.type === 'compaction');
    const askedAt = transcript.findIndex((e) => e.type === 'message' && messageText(e.message) === 'what next?');
    expect(transcript[compactionAt]).toMatchObject({ layer: 'hygiene', outcome: 'compacted' });
    expect(compactionAt).toBeLessThan(askedAt);
  });
});
