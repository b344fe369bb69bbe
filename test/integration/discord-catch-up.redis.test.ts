/**
 * Discord sends nothing again on a new connection: messages sent while no gateway was connected (a
 * restart, a fail-over gap) are caught up over REST after each connect, from the cursors every
 * gateway of the bot shares in Redis — in order, before live ones of the same channel, and without
 * what the earlier connection had handed on. discord.js runs unmodified against the fake server.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDiscordChannel, type DiscordChannel } from '../../channels/discord/index.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { createDiscordCursors } from '../../channels/discord/redis-cursors.js';
import { discordConnectedKey, discordCursorsKey } from '../../src/redis/keys.js';
import { FAKE_DISCORD_IDS, startFakeDiscord, type FakeDiscordServer } from '../fakes/discord-server.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { waitUntil } from '../helpers/waits.js';
import { EventEmitter } from 'node:events';

const BOT = 'bot-under-test';

describe('Discord catch-up after a connect', () => {
  let t: TestRedis;
  let fake: FakeDiscordServer;
  const open: DiscordChannel[] = [];
  const received: InboundMessage[] = [];
  const arrivals = new EventEmitter();

  const connect = async () => {
    const channel = createDiscordChannel({ catchUp: { cursors: createDiscordCursors(t.redis, BOT, t.keyPrefix) } }, { token: fake.token, apiRoot: fake.apiRoot, readyTimeoutMs: 10_000 });
    open.push(channel);
    await channel.start(async (message) => {
      received.push(message);
      arrivals.emit('message');
    });
    return channel;
  };
  const texts = () => received.map((m) => m.text);
  const cursors = () => t.redis.hgetall(discordCursorsKey(BOT, t.keyPrefix));
  const dm = (content: string) => fake.dispatchMessage({ content, where: 'dm' });

  beforeEach(async () => {
    t = createTestRedis();
    fake = await startFakeDiscord();
    received.length = 0;
  });
  afterEach(async () => {
    for (const channel of open.splice(0)) await channel.stop();
    await fake.close();
    await t.cleanup();
  });

  it('hands on what DMs and guild channels received while disconnected, oldest first, then live messages; nothing twice', async () => {
    const first = await connect();
    dm('one');
    fake.dispatchMessage({ content: `<@${FAKE_DISCORD_IDS.bot}> first mention`, where: 'guild', mentions: [FAKE_DISCORD_IDS.bot] });
    await waitUntil(arrivals, 'message', () => received.length === 2);
    for (;;) if (Object.keys(await cursors()).length === 2) break;
    await first.stop();

    // Nobody connected: Discord keeps these in the channels' history only.
    dm('two');
    fake.dispatchMessage({ content: 'chatter not for the bot', where: 'guild' });
    fake.dispatchMessage({ content: `<@${FAKE_DISCORD_IDS.bot}> second mention`, where: 'guild', mentions: [FAKE_DISCORD_IDS.bot] });
    dm('three');
    expect(received).toHaveLength(2);

    await connect();
    await waitUntil(arrivals, 'message', () => received.length === 5);
    dm('four');
    await waitUntil(arrivals, 'message', () => received.length === 6);
    expect(texts().slice(0, 2)).toEqual(['one', 'first mention']);
    // Per channel in order (the two channels are caught up one after the other).
    expect(texts().filter((text) => ['two', 'three', 'four'].includes(text))).toEqual(['two', 'three', 'four']);
    expect(texts()).toContain('second mention');
    expect(texts()).not.toContain('chatter not for the bot');
    expect(new Set(received.map((m) => m.id)).size).toBe(received.length);
    const guildMessage = received.find((m) => m.text === 'second mention')!;
    expect(guildMessage).toMatchObject({ channel: 'discord', chatId: FAKE_DISCORD_IDS.textChannel });
  });

  it('pages through a busy channel: a mention behind 150 messages of chatter is caught up', async () => {
    const first = await connect();
    fake.dispatchMessage({ content: `<@${FAKE_DISCORD_IDS.bot}> hello`, where: 'guild', mentions: [FAKE_DISCORD_IDS.bot] });
    await waitUntil(arrivals, 'message', () => received.length === 1);
    for (;;) if (Object.keys(await cursors()).length === 1) break;
    await first.stop();
    for (let i = 0; i < 150; i++) fake.dispatchMessage({ content: `chatter ${i}`, where: 'guild' });
    fake.dispatchMessage({ content: `<@${FAKE_DISCORD_IDS.bot}> are you there?`, where: 'guild', mentions: [FAKE_DISCORD_IDS.bot] });
    await connect();
    await waitUntil(arrivals, 'message', () => received.length === 2);
    expect(texts()).toEqual(['hello', 'are you there?']);
    expect(fake.callsOf('GET', /^\/channels\/\d+\/messages$/)).toHaveLength(2);
  });

  it('after a later new session (the old one expired, so Discord would not resume it), what was sent in between is caught up too', async () => {
    await connect();
    dm('before the drop');
    await waitUntil(arrivals, 'message', () => received.length === 1);
    for (;;) if (Object.keys(await cursors()).length === 1) break;
    fake.refuseGateway(true);
    fake.closeGateway(4000, 'Unknown error');
    fake.expireSessions();
    dm('while the connection was down');
    // A thread the bot had handled nothing in: read from when this process last knew it was connected.
    fake.dispatchMessage({ content: `<@${FAKE_DISCORD_IDS.bot}> in a quiet thread`, where: 'thread', mentions: [FAKE_DISCORD_IDS.bot] });
    fake.refuseGateway(false);
    await waitUntil(arrivals, 'message', () => received.length === 3);
    expect(texts()).toEqual(expect.arrayContaining(['before the drop', 'while the connection was down', 'in a quiet thread']));
    expect(received.find((m) => m.text === 'in a quiet thread')).toMatchObject({ chatId: FAKE_DISCORD_IDS.textChannel, threadId: FAKE_DISCORD_IDS.thread });
    expect(fake.gatewayReceived.filter((payload) => payload.op === 2)).toHaveLength(2);
  });

  it('a mention in a guild channel where the bot had handled nothing yet, sent while no gateway was connected, is caught up from the gap\'s start', async () => {
    const first = await connect();
    await first.stop();
    expect(await cursors()).toEqual({});
    expect(await t.redis.get(discordConnectedKey(BOT, t.keyPrefix))).toMatch(/^\d+$/);
    fake.dispatchMessage({ content: 'chatter not for the bot', where: 'guild' });
    fake.dispatchMessage({ content: `<@${FAKE_DISCORD_IDS.bot}> anyone home?`, where: 'guild', mentions: [FAKE_DISCORD_IDS.bot] });
    await connect();
    await waitUntil(arrivals, 'message', () => received.length === 1);
    dm('live');
    await waitUntil(arrivals, 'message', () => received.length === 2);
    expect(texts()).toEqual(['anyone home?', 'live']);
    expect(received[0]).toMatchObject({ channel: 'discord', chatId: FAKE_DISCORD_IDS.textChannel });
  });

  it('a guild channel\'s messages from before the gap are not read again', async () => {
    fake.dispatchMessage({ content: `<@${FAKE_DISCORD_IDS.bot}> long ago`, where: 'guild', mentions: [FAKE_DISCORD_IDS.bot] });
    // The last gateway was connected a minute after that mention (past the clocks' margin).
    await createDiscordCursors(t.redis, BOT, t.keyPrefix).markConnected(Date.now() + 60_000);
    await connect();
    dm('live');
    await waitUntil(arrivals, 'message', () => received.length === 1);
    expect(texts()).toEqual(['live']);
    expect(fake.callsOf('GET', /^\/channels\/\d+\/messages$/)).toHaveLength(0);
  });

  it('a first connect (no cursors) catches up nothing; a channel the bot cannot read any more is forgotten', async () => {
    await createDiscordCursors(t.redis, BOT, t.keyPrefix).record({ channelId: '900000000000000099', guildId: FAKE_DISCORD_IDS.guild }, '900000000000000100');
    dm('sent before the bot ever connected');
    fake.dispatchMessage({ content: `<@${FAKE_DISCORD_IDS.bot}> also before`, where: 'guild', mentions: [FAKE_DISCORD_IDS.bot] });
    await connect();
    for (;;) if (Object.keys(await cursors()).length === 0) break;
    dm('live');
    await waitUntil(arrivals, 'message', () => received.length === 1);
    expect(texts()).toEqual(['live']);
  });

  it('cursors older than the window are forgotten, not caught up', async () => {
    const store = createDiscordCursors(t.redis, BOT, t.keyPrefix);
    await store.record({ channelId: FAKE_DISCORD_IDS.dmChannel, guildId: null }, '1');
    expect(await store.recent(Date.now() + 1, 10)).toEqual([]);
    expect(await cursors()).toEqual({});
    await t.redis.hset(discordCursorsKey(BOT, t.keyPrefix), 'bad', 'not json');
    expect(await store.recent(0, 10)).toEqual([]);
    expect(await cursors()).toEqual({});
  });
});
