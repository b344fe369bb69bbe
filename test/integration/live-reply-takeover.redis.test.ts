import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDiscordChannel, type DiscordChannel } from '../../channels/discord/index.js';
import { createTelegramChannel, type TelegramChannel } from '../../channels/telegram/index.js';
import type { Channel } from '../../channels/channel.js';
import type { ChannelName, OutboundMessage } from '../../src/core/inbound.js';
import { createDelivery } from '../../src/outbound/delivery.js';
import { createMemoryDeliveryLedger, createRedisDeliveryLedger } from '../../src/outbound/delivery-ledger.js';
import { startGatewayLiveReplies, type GatewayLiveReplies } from '../../src/live-reply/gateway-live-replies.js';
import { createSilentLogger } from '../../src/log.js';
import { duplicateRedis } from '../../src/redis/client.js';
import { liveReplyRecordKey } from '../../src/redis/keys.js';
import type { LiveReplyUpdate } from '../../src/live-reply/record.js';
import { FAKE_DISCORD_IDS, startFakeDiscord, type FakeDiscordServer } from '../fakes/discord-server.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { createLogSink } from '../helpers/log-sink.js';
import { waitUntil } from '../helpers/waits.js';

const GROUP = '-100777';
const SESSION = `telegram:${GROUP}`;
const STREAM = 'reply-0123456789abcdef01234567-0';

const update = (run: string, seq: number, text: string, state: LiveReplyUpdate['state'] = 'open'): LiveReplyUpdate => ({
  liveReplyId: STREAM, sessionId: SESSION, channel: 'telegram', chatId: GROUP, chatType: 'group', run, seq, text, state, atMs: Date.now(), answers: ['telegram:1'],
});
const finalReply = (text: string): OutboundMessage => ({ id: STREAM, sessionId: SESSION, channel: 'telegram', chatId: GROUP, text, kind: 'reply' });

describe('the final reply takes over the partial message', () => {
  let t: TestRedis;
  let fake: FakeTelegramServer;
  let channel: TelegramChannel;
  const running: GatewayLiveReplies[] = [];

  /** One gateway's live-reply side (a fresh one stands for a gateway restarted after a crash). */
  const gateway = async (channels: ReadonlyMap<ChannelName, Channel>, idleMs?: number) => {
    const liveReplies = await startGatewayLiveReplies({ redis: t.redis, subscriber: duplicateRedis(t.redis), channels, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, intervalMs: { telegram: 0, discord: 0 }, ...(idleMs ? { idleMs } : {}) });
    running.push(liveReplies);
    return liveReplies;
  };
  const telegramOnly = () => new Map<ChannelName, Channel>([['telegram', channel]]);
  const groupMessages = () => [...fake.messages].filter(([key]) => key.startsWith(`${GROUP}:`));

  beforeEach(async () => {
    t = createTestRedis();
    fake = await startFakeTelegram();
    channel = createTelegramChannel({}, { token: fake.token, apiRoot: fake.apiRoot, pollTimeoutSeconds: 0 });
    await channel.start(async () => undefined);
  });
  afterEach(async () => {
    for (const liveReplies of running.splice(0)) await liveReplies.close();
    await channel.stop();
    await fake.close();
    await t.cleanup();
  });

  it('after a gateway crash the new gateway edits the final into the same message; a repeated delivery changes nothing', async () => {
    const first = await gateway(telegramOnly());
    first.onUpdate(update('a', 0, 'Half of the'));
    await waitUntil(fake, 'call', () => groupMessages().length === 1);
    await first.close();
    running.length = 0;
    // The gateway died; another one delivers the final reply (its ledger is empty: the crash lost nothing it had written).
    const second = await gateway(telegramOnly());
    const delivery = createDelivery({ channels: telegramOnly(), ledger: createMemoryDeliveryLedger(), liveReplies: second });
    const result = await delivery.deliver(finalReply('Half of the **answer**, whole.'));
    expect(groupMessages().map(([, text]) => text)).toEqual(['Half of the <b>answer</b>, whole.']);
    expect(fake.callsOf('sendMessage')).toHaveLength(1);
    // Crash between the edit and the ledger write: the retry edits again, Telegram says "not modified", nothing is sent.
    const again = await createDelivery({ channels: telegramOnly(), ledger: createMemoryDeliveryLedger(), liveReplies: second }).deliver(finalReply('Half of the **answer**, whole.'));
    expect(again.messageIds).toEqual(result.messageIds);
    expect(fake.callsOf('sendMessage')).toHaveLength(1);
    expect(groupMessages()).toHaveLength(1);
  });

  it('a partial update arriving after the final reply is ignored (the final stays)', async () => {
    const liveReplies = await gateway(telegramOnly());
    liveReplies.onUpdate(update('a', 0, 'Draft'));
    await waitUntil(fake, 'call', () => groupMessages().length === 1);
    const delivery = createDelivery({ channels: telegramOnly(), ledger: createRedisDeliveryLedger({ redis: t.redis }, { keyPrefix: t.keyPrefix }), liveReplies: liveReplies });
    await delivery.deliver(finalReply('Final words.'));
    liveReplies.onUpdate(update('a', 1, 'Draft that came late'));
    liveReplies.onUpdate(update('b', 0, 'A whole new run'));
    // A second gateway that only now hears of the stream refuses it too (the record in Redis says final).
    const other = await gateway(telegramOnly());
    other.onUpdate(update('c', 0, 'Yet another run'));
    await delivery.deliver(finalReply('Final words.'));
    expect(groupMessages().map(([, text]) => text)).toEqual(['Final words.']);
    expect(fake.callsOf('sendMessage')).toHaveLength(1);
  });

  it("a crashed worker's partial text is taken away when no update or final follows; a retry's run restarts the same message", async () => {
    const liveReplies = await gateway(telegramOnly(), 40);
    liveReplies.onUpdate(update('dead', 0, 'Text of a worker that'));
    liveReplies.onUpdate(update('dead', 1, 'Text of a worker that died'));
    await waitUntil(fake, 'call', () => fake.callsOf('deleteMessage').length === 1);
    expect(groupMessages()).toEqual([]);
    // The retried turn streams again from seq 0: a new message, then the final takes it over.
    liveReplies.onUpdate(update('retry', 0, 'Fresh'));
    await waitUntil(fake, 'call', () => groupMessages().length === 1);
    await createDelivery({ channels: telegramOnly(), ledger: createMemoryDeliveryLedger(), liveReplies: liveReplies }).deliver(finalReply('Fresh and final.'));
    expect(groupMessages().map(([, text]) => text)).toEqual(['Fresh and final.']);
  });

  it('the final is sent as a new message when the partial one was deleted by someone', async () => {
    const liveReplies = await gateway(telegramOnly());
    liveReplies.onUpdate(update('a', 0, 'Soon gone'));
    await waitUntil(fake, 'call', () => groupMessages().length === 1);
    fake.messages.clear();
    const result = await createDelivery({ channels: telegramOnly(), ledger: createMemoryDeliveryLedger(), liveReplies: liveReplies }).deliver(finalReply('Still delivered.'));
    expect(result.sent).toBe(1);
    expect(groupMessages().map(([, text]) => text)).toEqual(['Still delivered.']);
  });
});

describe('live replies on Discord', () => {
  let t: TestRedis;
  let fake: FakeDiscordServer;
  let channel: DiscordChannel;
  let liveReplies: GatewayLiveReplies;

  beforeEach(async () => {
    t = createTestRedis();
    fake = await startFakeDiscord();
    channel = createDiscordChannel({}, { token: fake.token, apiRoot: fake.apiRoot, readyTimeoutMs: 10_000 });
    await channel.start(async () => undefined);
    const channels = new Map<ChannelName, Channel>([['discord', channel]]);
    liveReplies = await startGatewayLiveReplies({ redis: t.redis, subscriber: duplicateRedis(t.redis), channels, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, intervalMs: { discord: 0 } });
  });
  afterEach(async () => {
    await liveReplies.close();
    await channel.stop();
    await fake.close();
    await t.cleanup();
  });

  it('edits one message in place (within 2000 characters), honours a 429, then edits the final into it and sends the rest', async () => {
    const chat = FAKE_DISCORD_IDS.textChannel;
    const discordUpdate = (seq: number, text: string): LiveReplyUpdate => ({ liveReplyId: STREAM, sessionId: `discord:${chat}`, channel: 'discord', chatId: chat, chatType: 'group', run: 'a', seq, text, state: 'open', atMs: Date.now(), answers: ['discord:1'] });
    const long = Array.from({ length: 200 }, (_, i) => `Line ${i}: ${'word '.repeat(4)}`).join('\n');
    fake.failNext('PATCH', /\/messages\/\d+$/, { status: 429, retryAfterSeconds: 0.2 });
    liveReplies.onUpdate(discordUpdate(0, long.slice(0, 300)));
    await waitUntil(fake, 'call', () => fake.messages.size === 1);
    liveReplies.onUpdate(discordUpdate(1, long.slice(0, 3000)));
    await waitUntil(fake, 'call', () => fake.callsOf('PATCH', /\/messages\/\d+$/).length >= 2);
    expect([...fake.messages.values()][0]!.length).toBeLessThanOrEqual(2000);
    expect([...fake.messages.values()][0]!).toMatch(/^… .*Line \d+/s);
    const delivery = createDelivery({ channels: new Map([['discord', channel]]), ledger: createMemoryDeliveryLedger(), liveReplies: liveReplies });
    await delivery.deliver({ id: STREAM, sessionId: `discord:${chat}`, channel: 'discord', chatId: chat, text: long, kind: 'reply' });
    const contents = [...fake.messages.values()];
    expect(contents.length).toBeGreaterThan(1);
    expect(contents[0]!.startsWith('Line 0:')).toBe(true);
    expect(contents.every((text) => [...text].length <= 2000)).toBe(true);
    expect(contents.join('\n').replace(/\s+/g, ' ').trim()).toBe(long.replace(/\s+/g, ' ').trim());
  });
});

describe('two gateways on one Discord chat', () => {
  let t: TestRedis;
  let fake: FakeDiscordServer;
  const channels: DiscordChannel[] = [];
  const running: GatewayLiveReplies[] = [];
  const chat = FAKE_DISCORD_IDS.dmChannel;
  const dmUpdate = (seq: number, text: string): LiveReplyUpdate => ({ liveReplyId: STREAM, sessionId: `discord:${chat}`, channel: 'discord', chatId: chat, chatType: 'private', run: 'a', seq, text, state: 'open', atMs: Date.now(), answers: ['discord:1'] });
  const final = (text: string): OutboundMessage => ({ id: STREAM, sessionId: `discord:${chat}`, channel: 'discord', chatId: chat, text, kind: 'reply' });

  /** One gateway: its own discord.js client and its own live-reply side (logging at debug), on the shared Redis. */
  const gateway = async () => {
    const channel = createDiscordChannel({}, { token: fake.token, apiRoot: fake.apiRoot, readyTimeoutMs: 10_000 });
    await channel.start(async () => undefined);
    channels.push(channel);
    const map = new Map<ChannelName, Channel>([['discord', channel]]);
    const logs = createLogSink('debug');
    const liveReplies = await startGatewayLiveReplies({ redis: t.redis, subscriber: duplicateRedis(t.redis), channels: map, logger: logs.logger }, { keyPrefix: t.keyPrefix, intervalMs: { discord: 0 } });
    running.push(liveReplies);
    const refused = (reason: string) => logs.waitFor((line) => line.reason === reason && /^partial not shown/.test(line.msg));
    return { liveReplies, refused, delivery: createDelivery({ channels: map, ledger: createMemoryDeliveryLedger(), liveReplies: liveReplies }) };
  };
  const record = () => t.redis.hgetall(liveReplyRecordKey(`discord:${chat}`, STREAM, t.keyPrefix));

  beforeEach(async () => {
    t = createTestRedis();
    fake = await startFakeDiscord();
  });
  afterEach(async () => {
    for (const liveReplies of running.splice(0)) await liveReplies.close();
    for (const channel of channels.splice(0)) await channel.stop();
    await fake.close();
    await t.cleanup();
  });

  it('one shows the stream; the final delivered by the other waits for its edit in flight, and no preview lands after it', async () => {
    const a = await gateway();
    const b = await gateway();
    a.liveReplies.onUpdate(dmUpdate(0, 'The answer'));
    await waitUntil(fake, 'call', () => fake.messages.size === 1);
    for (;;) if ((await record()).messageId) break;
    // A's next edit hangs at Discord. B hears of the stream now: it shows nothing (A does).
    const release = fake.holdNext('PATCH', /\/messages\/\d+$/);
    a.liveReplies.onUpdate(dmUpdate(1, 'The answer is'));
    await waitUntil(fake, 'call', () => fake.callsOf('PATCH', /\/messages\/\d+$/).length === 1);
    b.liveReplies.onUpdate(dmUpdate(1, 'The answer is'));
    await b.refused('other');
    // B delivers the final reply: it marks the stream final and waits for A's edit before its own.
    const delivered = b.delivery.deliver(final('The answer is 42.'));
    for (;;) {
      const view = await record();
      if (view.final === '1' && view.callUntil !== undefined) break;
    }
    expect(fake.callsOf('PATCH', /\/messages\/\d+$/)).toHaveLength(1);
    release();
    await delivered;
    expect([...fake.messages.values()]).toEqual(['The answer is 42.']);
    // A late update (pub/sub is not ordered with the outbound queue) shows nothing on A.
    a.liveReplies.onUpdate(dmUpdate(2, 'The answer is 4'));
    await a.refused('final');
    expect([...fake.messages.values()]).toEqual(['The answer is 42.']);
    expect(fake.callsOf('POST', /\/messages$/)).toHaveLength(1);
  });
});
