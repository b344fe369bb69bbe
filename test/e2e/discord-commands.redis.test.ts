import { describe, expect, it } from 'vitest';
import { createDiscordChannel } from '../../channels/discord/index.js';
import { messageText } from '../../src/core/messages.js';
import { FAKE_DISCORD_IDS, startFakeDiscord } from '../fakes/discord-server.js';
import type { FakeHandler, FakeReply } from '../fakes/openai-server.js';
import { useFakeServer } from '../helpers/fake-fixture.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { waitUntil } from '../helpers/waits.js';

let stack: Stack | undefined;
const discord = useFakeServer(() => startFakeDiscord(), async () => {
  await stack?.close();
  stack = undefined;
});

/** The display name the fake gives the user 'ada'. */
const NAME = 'Ada Lovelace';
const MESSAGES = /^\/channels\/\d+\/messages$/;

async function start(handler: FakeHandler): Promise<Stack> {
  const channel = createDiscordChannel({}, { token: discord().token, apiRoot: discord().apiRoot, readyTimeoutMs: 10_000 });
  // The bot's posts are read as they are created; partial replies (edited in place) are tested in live-reply-takeover.
  stack = await startStack({ channels: { list: [channel] }, handler, env: { CHATGATE_LIVE_REPLIES: 'false' } });
  return stack;
}

const posted = () => discord().callsOf('POST', MESSAGES).map((call) => String(call.body?.content));
/** Sends `content` (in a DM, or in the guild channel without a mention) and resolves with the bot's next post. */
async function send(content: string, where: 'dm' | 'guild' | 'mention' = 'dm'): Promise<string> {
  const before = posted().length;
  if (where === 'mention') discord().dispatchMessage({ content: `<@${FAKE_DISCORD_IDS.bot}> ${content}`, where: 'guild', mentions: [FAKE_DISCORD_IDS.bot], author: { id: FAKE_DISCORD_IDS.user, username: 'ada' } });
  else discord().dispatchMessage({ content, where, author: { id: FAKE_DISCORD_IDS.user, username: 'ada' } });
  await waitUntil(discord(), 'call', () => posted().length > before);
  return posted()[before]!;
}


describe('chat commands on Discord', () => {
  it('answers /start, /new and /stop in a DM, and /stop ends a hanging turn', async () => {
    let hang = true;
    const s = await start(() => (hang ? { hold: new Promise<FakeReply>(() => undefined) } : { content: 'done' }));
    expect(await send('/start')).toMatch(/^Hello![\s\S]*\/stop/);
    discord().dispatchMessage({ content: 'a long one', where: 'dm', author: { id: FAKE_DISCORD_IDS.user, username: 'ada' } });
    await s.llm.waitForRequest(() => true);
    expect(await send('/stop')).toBe('Stopped.');
    hang = false;
    expect(await send('/new')).toBe('Started a fresh conversation (1 message left the context; the transcript keeps it).');
    expect(await send('hello')).toBe('done');
  });

  it('answers the commands in a guild channel without a mention; /retry asks a group message again under its sender\'s name', async () => {
    const s = await start((request) => ({ content: `Answer ${request.index}` }));
    expect(await send('/help', 'guild')).toContain('/retry');
    expect(await send('what is the plan?', 'mention')).toBe('Answer 0');
    expect(await send('/retry', 'guild')).toBe('Asking again: “what is the plan?”');
    await waitUntil(discord(), 'call', () => posted().includes('Answer 1'));
    const asked = s.agentRequests()[1]!.messages.filter((m) => m.role === 'user').map((m) => messageText(m));
    expect(asked).toEqual([`${NAME}: what is the plan?`]);
  });
});
