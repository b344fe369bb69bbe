import { afterEach, describe, expect, it } from 'vitest';
import { createTelegramChannel } from '../../channels/telegram/index.js';
import { messageText } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { readUsage } from '../../src/redis/usage.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import { prose } from '../helpers/histories.js';
import { startStack, type Stack } from '../helpers/stack.js';

let telegram: FakeTelegramServer;
let stack: Stack;

afterEach(async () => {
  await stack.close();
  await telegram.close();
});

describe('gateway hygiene at 85%', () => {
  it('compacts an idle session over the line before its next turn, so the worker request is under it', async () => {
    telegram = await startFakeTelegram();
    const channel = createTelegramChannel({}, { token: telegram.token, apiRoot: telegram.apiRoot, pollTimeoutSeconds: 1 });
    // 8,000-token window: the worker compacts at 4,000, hygiene fires at 6,800.
    stack = await startStack({
      channels: { list: [channel] },
      env: { CHATGATE_CONTEXT_WINDOW: '8000', CHATGATE_MAX_MESSAGE_CHARS: '100000' },
      handler: (request) => {
        const last = messageText(request.messages.at(-1)!);
        // The pasted question gets a very long answer, taking the session from ~3,100 to ~7,000 tokens.
        return { content: last.includes('PASTE') ? `Long answer: ${prose(3800, 'a')}` : 'Short answer.' };
      },
    });
    const say = (text: string) => telegram.pushMessage({ text, chat: { id: 42, type: 'private' } });
    const replies = () => telegram.callsOf('sendMessage').length;
    say('hello');
    await telegram.waitForCall('sendMessage', 1);
    say(`PASTE ${prose(2600, 'p')}`);
    await telegram.waitForCall('sendMessage', replies() + 1);
    const before = stack.agentRequests().length;
    say('what next?');
    const request = await stack.llm.waitForRequest((r) => r.index >= 0 && stack.agentRequests().indexOf(r) === before);
    await telegram.waitForCall('sendMessage', replies() + 1);

    const keys = sessionKeys('telegram:42', stack.t.keyPrefix);
    const usage = await readUsage(stack.t.redis, keys);
    const hygiene = Object.entries(usage.compactions).filter(([k]) => k.startsWith('hygiene:'));
    expect(hygiene.length).toBeGreaterThan(0);
    expect(request.promptTokens).toBeLessThan(6800);
    const events = (await readTranscript(stack.t.redis, keys)).filter((e) => e.type === 'compaction');
    expect(events[0]).toMatchObject({ layer: 'hygiene' });
  });
});
