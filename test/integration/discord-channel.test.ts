import { describe, expect, it } from 'vitest';
import { createDiscordChannel, NOT_ACCEPTED_REPLY, type DiscordChannel, type DiscordChannelOptions } from '../../channels/discord/index.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { measureText } from '../../src/core/split.js';
import { ChannelError } from '../../src/errors.js';
import { createDelivery } from '../../src/outbound/delivery.js';
import { createMemoryDeliveryLedger } from '../../src/outbound/delivery-ledger.js';
import { createTypingIndicators } from '../../src/gateway/typing.js';
import { FAKE_DISCORD_IDS as IDS, startFakeDiscord } from '../fakes/discord-server.js';
import { useFakeServer } from '../helpers/fake-fixture.js';

let channel: DiscordChannel | undefined;
const fake = useFakeServer(() => startFakeDiscord({ heartbeatIntervalMs: 200 }), async () => {
  await channel?.stop();
  channel = undefined;
});

/** Collects inbound messages; `next()` resolves with the next one not yet returned. */
function inbox(handler?: (message: InboundMessage) => Promise<void>) {
  const received: InboundMessage[] = [];
  const waiters: Array<() => void> = [];
  let consumed = 0;
  const onMessage = async (message: InboundMessage): Promise<void> => {
    if (handler) await handler(message);
    received.push(message);
    waiters.splice(0).forEach((wake) => wake());
  };
  const next = async (count = consumed + 1): Promise<InboundMessage> => {
    while (received.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    consumed = Math.max(consumed, count);
    return received[count - 1];
  };
  return { received, onMessage, next };
}

async function startChannel(onMessage: (message: InboundMessage) => Promise<void>, options: Partial<DiscordChannelOptions> = {}): Promise<DiscordChannel> {
  channel = createDiscordChannel({}, { token: fake().token, apiRoot: fake().apiRoot, ...options });
  await channel.start(onMessage);
  return channel;
}

const reply = (text: string, chatId: string, threadId?: string) => ({
  id: `r${Math.random()}`, sessionId: `discord:${chatId}`, channel: 'discord' as const, chatId, threadId, text, kind: 'reply' as const,
});
const messagesPath = (channelId: string) => new RegExp(`^/channels/${channelId}/messages$`);


describe('discord channel: gateway and inbound', () => {
  it('identifies with the required intents and heartbeats', async () => {
    await startChannel(inbox().onMessage);
    expect(channel!.botUserId).toBe(IDS.bot);
    const identify = fake().gatewayReceived.find((payload) => payload.op === 2)!.d as { intents: number };
    // Guilds (1) | GuildMessages (512) | DirectMessages (4096) | MessageContent (32768)
    expect(identify.intents).toBe(1 | 512 | 4096 | 32768);
    await fake().waitForGateway(1);
    expect(fake().callsOf('GET', /^\/gateway\/bot$/)).toHaveLength(1);
  });

  it('emits DMs, guild mentions, replies to the bot, commands and thread messages', async () => {
    const { onMessage, next, received } = inbox();
    await startChannel(onMessage);
    fake().dispatchMessage({ where: 'dm', content: 'hello in private' });
    expect(await next()).toMatchObject({ channel: 'discord', chatId: IDS.dmChannel, userId: IDS.user, userName: 'Ada Lovelace', text: 'hello in private', chatType: 'private' });
    fake().dispatchMessage({ where: 'guild', content: 'not for the bot' });
    fake().dispatchMessage({ where: 'guild', content: `<@${IDS.bot}> what is 2+2?`, mentions: [IDS.bot] });
    fake().dispatchMessage({ where: 'guild', content: 'and 3+3?', replyTo: { messageId: '1234', authorId: IDS.bot } });
    fake().dispatchMessage({ where: 'guild', content: '/usage' });
    const threadMessageId = fake().dispatchMessage({ where: 'thread', content: `<@${IDS.bot}> in a thread`, mentions: [IDS.bot] });
    await next(5);
    // Order is kept per channel; the thread is another channel, so compare without order.
    const summary = received.slice(1).map((m) => [m.text, m.chatId, m.threadId, m.chatType, m.replyTo]);
    expect(summary.sort()).toEqual([
      ['what is 2+2?', IDS.textChannel, undefined, 'group', undefined],
      ['and 3+3?', IDS.textChannel, undefined, 'group', '1234'],
      ['/usage', IDS.textChannel, undefined, 'group', undefined],
      ['in a thread', IDS.textChannel, IDS.thread, 'group', undefined],
    ].sort());
    expect(received.find((m) => m.threadId)!.id).toBe(`discord:${IDS.thread}:${threadMessageId}`);
  });

  it('ignores bots and hands attachments without text to the gateway with their type, name and size, sending nothing itself', async () => {
    const { onMessage, received, next } = inbox();
    await startChannel(onMessage);
    fake().dispatchMessage({ where: 'dm', content: 'from a bot', author: { id: '5', username: 'other', bot: true } });
    fake().dispatchMessage({ where: 'dm', content: '', attachments: [{ filename: 'a.pdf', content_type: 'application/pdf' }] });
    expect(await next()).toMatchObject({ channel: 'discord', chatId: IDS.dmChannel, text: '', attachments: [{ kind: 'document', mimeType: 'application/pdf', fileName: 'a.pdf', size: 10 }] });
    expect(received).toHaveLength(1);
    expect(fake().callsOf('POST', messagesPath(IDS.dmChannel))).toEqual([]);
  });

  it('tells the user when a message could not be accepted', async () => {
    await startChannel(async () => {
      throw new Error('redis down');
    });
    const messageId = fake().dispatchMessage({ where: 'dm', content: 'hello?' });
    const sent = await fake().waitForCall('POST', messagesPath(IDS.dmChannel));
    expect(sent.body).toMatchObject({ content: NOT_ACCEPTED_REPLY, message_reference: { message_id: messageId } });
  });

  it('rejects a token the gateway refuses, with a ChannelError', async () => {
    channel = createDiscordChannel({}, { token: 'wrong-token', apiRoot: fake().apiRoot });
    const error = await channel.start(inbox().onMessage).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ChannelError);
    expect((error as Error).message).not.toContain('wrong-token');
    channel = undefined;
  });
});

describe('discord channel: outbound', () => {
  it('delivers a long reply in chunks of at most 2000 characters, without pinging anyone', async () => {
    await startChannel(inbox().onMessage);
    const text = Array.from({ length: 80 }, (_, i) => `Line ${i} 😀 @everyone ${'lorem ipsum '.repeat(4)}`).join('\n');
    const delivery = createDelivery({ channels: new Map([['discord', channel!]]), ledger: createMemoryDeliveryLedger() });
    const result = await delivery.deliver(reply(text, IDS.textChannel, IDS.thread));
    const calls = fake().callsOf('POST', messagesPath(IDS.thread));
    expect(result.chunks).toBeGreaterThan(1);
    expect(calls).toHaveLength(result.chunks);
    for (const call of calls) {
      expect(measureText(String(call.body!.content), 'codepoints')).toBeLessThanOrEqual(2000);
      expect(call.body!.allowed_mentions).toEqual({ parse: [], replied_user: false });
    }
    expect(calls.map((call) => call.body!.content).join('\n')).toBe(text);
  });

  it('surfaces a 429 at once by default, as a rate-limited ChannelError carrying retry_after', async () => {
    await startChannel(inbox().onMessage);
    fake().failNext('POST', messagesPath(IDS.dmChannel), { status: 429, retryAfterSeconds: 30 });
    const error = await channel!.send({ chatId: IDS.dmChannel }, { text: 'hello', mode: 'formatted' }).catch((err: unknown) => err);
    expect(error).toMatchObject({ code: 'CHANNEL_RATE_LIMITED', retryable: true });
    expect((error as ChannelError).retryAfterMs).toBeGreaterThan(29_000);
    expect(fake().callsOf('POST', messagesPath(IDS.dmChannel))).toHaveLength(1);
  });

  it('waits a short 429 inside the call when maxRateLimitWaitMs allows it', async () => {
    await startChannel(inbox().onMessage, { maxRateLimitWaitMs: 5_000 });
    fake().failNext('POST', messagesPath(IDS.dmChannel), { status: 429, retryAfterSeconds: 0.4 });
    const sent = await channel!.send({ chatId: IDS.dmChannel }, { text: 'hello', mode: 'formatted' });
    const [first, second] = fake().callsOf('POST', messagesPath(IDS.dmChannel));
    expect(second.body).toMatchObject({ content: 'hello' });
    expect(second.atMs - first.atMs).toBeGreaterThanOrEqual(400);
    expect(sent.messageId).toMatch(/^\d+$/);
  });

  it('surfaces a rate limit longer than maxRateLimitWaitMs as a retryable ChannelError', async () => {
    await startChannel(inbox().onMessage, { maxRateLimitWaitMs: 100 });
    fake().failNext('POST', messagesPath(IDS.dmChannel), { status: 429, retryAfterSeconds: 5 });
    const error = await channel!.send({ chatId: IDS.dmChannel }, { text: 'hello', mode: 'formatted' }).catch((err: unknown) => err);
    expect(error).toMatchObject({ code: 'CHANNEL_RATE_LIMITED', retryable: true });
    expect((error as ChannelError).retryAfterMs).toBeGreaterThan(4_000);
  });

  it('turns an unknown channel into a permanent ChannelError', async () => {
    await startChannel(inbox().onMessage);
    const error = await channel!.send({ chatId: '1' }, { text: 'x', mode: 'plain' }).catch((err: unknown) => err);
    expect(error).toMatchObject({ retryable: false, code: 'CHANNEL_PERMANENT' });
    expect((error as Error).message).toBe('createMessage failed for discord:1 (404: Unknown Channel (code 10003))');
  });

  it('renews the typing indicator until stopped (204 without a body)', async () => {
    await startChannel(inbox().onMessage, { typingIntervalMs: 30 });
    const typing = createTypingIndicators();
    typing.start('discord:thread', channel!, { chatId: IDS.textChannel, threadId: IDS.thread });
    await fake().waitForCall('POST', new RegExp(`^/channels/${IDS.thread}/typing$`), 3);
    typing.stop('discord:thread');
    expect(typing.active()).toEqual([]);
  });
});
