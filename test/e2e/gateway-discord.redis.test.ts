import { describe, expect, it } from 'vitest';
import { createDiscordChannel } from '../../channels/discord/index.js';
import { messageText } from '../../src/core/messages.js';
import { startGateway } from '../../src/gateway/index.js';
import { createSilentLogger } from '../../src/log.js';
import { MemorySessionView } from '../../src/monitor/memory-session-reader.js';
import type { PrometheusMetrics } from '../../src/monitor/metrics.js';
import { gatewayOptions } from '../../src/cli/compose.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readUsage } from '../../src/redis/usage.js';
import { FAKE_DISCORD_IDS, startFakeDiscord, type FakeDiscordServer } from '../fakes/discord-server.js';
import type { FakeHandler } from '../fakes/openai-server.js';
import { useFakeServer } from '../helpers/fake-fixture.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { waitUntil } from '../helpers/waits.js';

let stack: Stack | undefined;
const discord = useFakeServer(() => startFakeDiscord(), async () => {
  await stack?.close();
  stack = undefined;
});

const MESSAGES = /^\/channels\/\d+\/messages$/;
const BOT = FAKE_DISCORD_IDS.bot;

async function start(handler: FakeHandler, env: Record<string, string> = {}): Promise<Stack> {
  const channel = createDiscordChannel({}, { token: discord().token, apiRoot: discord().apiRoot, readyTimeoutMs: 10_000 });
  // These tests count the messages posted; partial replies (edited in place) are tested in streaming-discord.
  stack = await startStack({ channels: { list: [channel] }, handler, env: { CHATGATE_LIVE_REPLIES: 'false', ...env } });
  return stack;
}

/** Bodies of the messages the bot posted, optionally in one channel only. */
const posted = (channelId?: string) => discord().callsOf('POST', MESSAGES)
  .filter((call) => channelId === undefined || call.path === `/channels/${channelId}/messages`)
  .map((call) => String(call.body?.content));
const untilPosted = (condition: () => boolean) => waitUntil(discord(), 'call', condition);
const dm = (content: string, authorId: string = FAKE_DISCORD_IDS.user) => discord().dispatchMessage({ content, where: 'dm', author: { id: authorId, username: 'ada' } });
const mention = (content: string, authorId: string = FAKE_DISCORD_IDS.user) =>
  discord().dispatchMessage({ content: `<@${BOT}> ${content}`, where: 'guild', mentions: [BOT], author: { id: authorId, username: 'ada' } });


describe('gateway with Discord', () => {
  it('answers a DM and a guild mention end to end, with the typing indicator', async () => {
    const s = await start((request) => ({ content: `You said: ${messageText(request.messages.at(-1)!)}` }));
    dm('hi there');
    const first = await discord().waitForCall('POST', MESSAGES);
    expect(first.path).toBe(`/channels/${FAKE_DISCORD_IDS.dmChannel}/messages`);
    expect(first.body).toMatchObject({ content: 'You said: hi there', allowed_mentions: { parse: [] } });
    expect(discord().callsOf('POST', /\/typing$/).length).toBeGreaterThan(0);

    mention('what about the guild?');
    const second = await discord().waitForCall('POST', MESSAGES, 2);
    expect(second.path).toBe(`/channels/${FAKE_DISCORD_IDS.textChannel}/messages`);
    // The mention is stripped before the text reaches the model (group turns carry the speaker's name);
    // the guild channel is its own session.
    expect(second.body?.content).toBe('You said: Ada Lovelace: what about the guild?');
    expect(s.agentRequests()).toHaveLength(2);
    expect(s.agentRequests()[1].messages.filter((m) => m.role === 'user')).toHaveLength(1);
  });

  it('splits a long reply at the 2000-character limit and honours a 429', async () => {
    const long = Array.from({ length: 300 }, (_, i) => `Line ${i}: ${'word '.repeat(8)}`).join('\n');
    await start(() => ({ content: long }));
    discord().failNext('POST', MESSAGES, { status: 429, retryAfterSeconds: 1 });
    dm('tell me everything');
    await untilPosted(() => posted().some((t) => t.includes('Line 299:')));
    const calls = discord().callsOf('POST', MESSAGES);
    // The first POST got the 429; the same chunk is posted again after retry_after.
    expect(calls[1].atMs - calls[0].atMs).toBeGreaterThanOrEqual(900);
    const delivered = posted().slice(1);
    expect(delivered.length).toBeGreaterThan(1);
    expect(new Set(delivered).size).toBe(delivered.length);
    expect(delivered.every((t) => [...t].length <= 2000)).toBe(true);
    const normalise = (text: string) => text.replace(/\s+/g, ' ').trim();
    expect(normalise(delivered.join('\n'))).toBe(normalise(long));
  });

  it('answers /usage and /compact with real figures', async () => {
    const s = await start((request) => ({ content: `Answer ${request.index}. ${'detail of the answer '.repeat(60)}` }));
    for (let i = 0; i < 10; i++) {
      const before = posted().length;
      dm(`question ${i}`);
      await untilPosted(() => posted().length > before);
    }
    const sessionId = `discord:${FAKE_DISCORD_IDS.dmChannel}`;
    const usage = await readUsage(s.t.redis, sessionKeys(sessionId, s.t.keyPrefix));
    expect(usage.calls).toBe(10);
    dm('/usage');
    await untilPosted(() => posted().length >= 11);
    expect(posted()[10]).toContain(`${usage.promptTokens.toLocaleString('en-US')} in`);
    expect(posted()[10]).toContain(`${usage.completionTokens.toLocaleString('en-US')} out`);
    expect(posted()[10]).toContain('10 model calls');
    dm('/compact the questions');
    await untilPosted(() => posted().length >= 12);
    const match = /Compacted \(focus: the questions\): ([\d,]+) → ([\d,]+) tokens/.exec(posted()[11]);
    expect(match, posted()[11]).not.toBeNull();
    expect(Number(match![2].replace(/,/g, ''))).toBeLessThan(Number(match![1].replace(/,/g, '')));
    expect(s.agentRequests()).toHaveLength(10);
  });

  it('answers a re-dispatched MESSAGE_CREATE once, refuses unlisted users and over-size messages without the LLM', async () => {
    const s = await start(() => ({ content: 'ok' }), { CHATGATE_ALLOW_DISCORD: FAKE_DISCORD_IDS.user, CHATGATE_MAX_MESSAGE_CHARS: '100' });
    const dispatched = recordMessageDispatches(discord());
    dm('once please');
    redispatch(discord(), dispatched[0]);
    dm('let me in', '900000000000000099');
    mention('let me in too', '900000000000000098');
    dm('x'.repeat(500));
    // The second message waits for the first answer, or both could be answered in one turn.
    await untilPosted(() => posted(FAKE_DISCORD_IDS.dmChannel).includes('ok'));
    dm('and now a second one');
    mention('and one in the guild');
    // Messages of one channel are handled in arrival order: once the later ones are answered, a duplicate would have been too.
    const dmReplies = () => posted(FAKE_DISCORD_IDS.dmChannel);
    await untilPosted(() => dmReplies().filter((t) => t === 'ok').length >= 2 && posted(FAKE_DISCORD_IDS.textChannel).includes('ok'));
    await untilPosted(() => dmReplies().some((t) => t.includes('the limit is 100')) && dmReplies().some((t) => /not authorised/.test(t)));
    expect(dmReplies().filter((t) => t === 'ok')).toHaveLength(2);
    expect(dmReplies().find((t) => /not authorised/.test(t))).toContain('900000000000000099');
    // The unlisted user in the guild gets silence; the listed one an answer.
    expect(posted(FAKE_DISCORD_IDS.textChannel)).toEqual(['ok']);
    expect(s.agentRequests()).toHaveLength(3);
    const asked = s.agentRequests().map((r) => messageText(r.messages.at(-1)!));
    expect(asked.filter((t) => t === 'once please')).toHaveLength(1);
    expect(asked).toEqual(expect.arrayContaining(['once please', 'and now a second one', 'Ada Lovelace: and one in the guild']));
  });

  it('answers once when two gateways on the same bot (a rolling restart) both receive a message', async () => {
    // discord().js drops a re-dispatched message still in its cache; a second client has an empty
    // cache, so here every message reaches two gateways and only the dedupe in Redis stops the copy.
    const s = await start(() => ({ content: 'ok' }));
    const second = createDiscordChannel({}, { token: discord().token, apiRoot: discord().apiRoot, readyTimeoutMs: 10_000 });
    const other = await startGateway({ redis: s.t.redis, logger: createSilentLogger(), metrics: s.metrics, sessions: new MemorySessionView(), channels: { list: [second] } }, gatewayOptions(s.config));
    const duplicatesBefore = await duplicateCount(s.metrics);
    try {
      dm('only once');
      await untilPosted(() => posted().length >= 1);
      dm('and then this');
      await untilPosted(() => posted().length >= 2);
      expect(posted()).toEqual(['ok', 'ok']);
      expect(s.agentRequests()).toHaveLength(2);
      const users = s.agentRequests()[1].messages.filter((m) => m.role === 'user').map((m) => messageText(m));
      expect(users).toEqual(['only once', 'and then this']);
      expect((await duplicateCount(s.metrics)) - duplicatesBefore).toBe(2);
    } finally {
      await other.close();
    }
  });
});

/**
 * Records the MESSAGE_CREATE payloads the fake dispatches, so one can be sent again with the same
 * id (as Discord replays events after a resume). The fake's `dispatch` is private: reached by name.
 */
function recordMessageDispatches(fake: FakeDiscordServer): unknown[] {
  const payloads: unknown[] = [];
  const original = fake['dispatch'].bind(fake);
  fake['dispatch'] = (event: string, data: unknown) => {
    if (event === 'MESSAGE_CREATE') payloads.push(data);
    original(event, data);
  };
  return payloads;
}

/** Duplicates both gateways dropped (they record into the stack's metrics). */
async function duplicateCount(metrics: PrometheusMetrics): Promise<number> {
  const values = (await metrics.registry.getSingleMetric('chatgate_inbound_messages_total')?.get())?.values ?? [];
  return values.find((v) => v.labels.channel === 'discord' && v.labels.outcome === 'duplicate')?.value ?? 0;
}

function redispatch(fake: FakeDiscordServer, payload: unknown): void {
  fake['dispatch']('MESSAGE_CREATE', payload);
}
