/**
 * The channel lease on real Redis: one holder at a time, fencing, a graceful hand-over, expiry,
 * and a holder that loses Redis past its lease stops receiving before another gateway starts.
 */
import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Channel, InboundHandler } from '../../channels/channel.js';
import { createLeasedChannel, type LeasedChannel } from '../../src/gateway/channel-lease.js';
import { createChannels } from '../../src/gateway/channels.js';
import { createSilentLogger } from '../../src/log.js';
import { acquireChannelLease, botIdentity, readChannelLeases, releaseChannelLease, renewChannelLease } from '../../src/redis/channel-lease.js';
import { channelLeaseKeys, sessionKeys } from '../../src/redis/keys.js';
import { acquireLease } from '../../src/redis/lease.js';
import { FAKE_DISCORD_IDS, startFakeDiscord } from '../fakes/discord-server.js';
import { startFakeTelegram } from '../fakes/telegram-server.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { waitUntil } from '../helpers/waits.js';

const TTL_MS = 600;
const BOT = botIdentity('123456:secret-token');

/** What the receivers did, in order, on one shared log. */
class Events extends EventEmitter {
  readonly log: string[] = [];
  add(entry: string): void {
    this.log.push(entry);
    this.emit('entry');
  }
}

/** A receiving channel that records its start and stop (it fails to start when `failStart`). */
function receiver(events: Events, gateway: string, windows: Array<() => number>, failStart = false): (windowMs: () => number) => Channel {
  return (windowMs) => {
    windows.push(windowMs);
    return {
      ...sender(),
      async start(_onMessage: InboundHandler) {
        if (failStart) throw new Error(`${gateway} cannot connect`);
        events.add(`${gateway} started`);
      },
      async stop() {
        events.add(`${gateway} stopped`);
      },
    };
  };
}

function sender(): Channel {
  return {
    name: 'telegram', maxMessageLength: 4096, lengthUnit: 'utf16', formatting: 'plain', typingIntervalMs: 4000,
    async start() { throw new Error('the sender is never started'); },
    async stop() { /* nothing runs */ },
    async send() { return { messageId: 'sent-by-sender' }; },
    async sendTyping() { /* shown */ },
  };
}

describe('channel lease', () => {
  let t: TestRedis;
  const opened: Redis[] = [];
  const channels: LeasedChannel[] = [];

  beforeEach(() => {
    t = createTestRedis();
  });
  afterEach(async () => {
    await Promise.all(channels.splice(0).map((channel) => channel.stop()));
    for (const redis of opened.splice(0)) redis.disconnect();
    await t.cleanup();
  });

  const connection = (): Redis => {
    const redis = new Redis(t.url, { maxRetriesPerRequest: 1, lazyConnect: false });
    redis.on('error', () => undefined);
    opened.push(redis);
    return redis;
  };
  const leased = (gateway: string, events: Events, options: { redis?: Redis; failStart?: boolean; windows?: Array<() => number>; ttlMs?: number } = {}): LeasedChannel => {
    const channel = createLeasedChannel(
      { redis: options.redis ?? connection(), log: createSilentLogger(), sender: sender(), createReceiver: receiver(events, gateway, options.windows ?? [], options.failStart) },
      { botId: BOT, keyPrefix: t.keyPrefix, holder: gateway, ttlMs: options.ttlMs ?? TTL_MS },
    );
    channels.push(channel);
    return channel;
  };
  const handler: InboundHandler = async () => undefined;

  it('runs in one gateway; the other stands by, sends all the same, and takes over at once on a graceful stop', async () => {
    const events = new Events();
    const a = leased('A', events);
    const b = leased('B', events);
    await a.start(handler);
    await b.start(handler);
    expect([a.leaseRole, b.leaseRole]).toEqual(['holding', 'standby']);
    expect(await b.send({ chatId: '1' }, { text: 'hi', mode: 'plain' })).toEqual({ messageId: 'sent-by-sender' });
    const [row] = await readChannelLeases(t.redis, t.keyPrefix);
    expect(row).toMatchObject({ channel: 'telegram', botId: BOT, holder: 'A' });

    await a.stop();
    await waitUntil(events, 'entry', () => events.log.includes('B started'));
    expect(events.log).toEqual(['A started', 'A stopped', 'B started']);
    expect(b.leaseRole).toBe('holding');
    expect((await readChannelLeases(t.redis, t.keyPrefix))[0]).toMatchObject({ holder: 'B' });
  });

  it('announces a release: the standby takes over without waiting for its next check', async () => {
    const events = new Events();
    // A lease of 10 minutes: the standby's own check (every tenth of it) would come after the test's timeout.
    const a = leased('A', events, { ttlMs: 600_000 });
    const b = leased('B', events, { ttlMs: 600_000 });
    await a.start(handler);
    await b.start(handler);
    await a.stop();
    await waitUntil(events, 'entry', () => events.log.includes('B started'));
    expect(events.log).toEqual(['A started', 'A stopped', 'B started']);
  });

  it('a holder cut off from Redis stops receiving before another gateway starts', async () => {
    const events = new Events();
    const redisA = connection();
    const windows: Array<() => number> = [];
    const a = leased('A', events, { redis: redisA, windows });
    const b = leased('B', events);
    await a.start(handler);
    await b.start(handler);
    expect(windows[0]()).toBeGreaterThan(0);
    // A can no longer renew (as when it is paused or Redis is away from it longer than the lease).
    redisA.disconnect();
    await waitUntil(events, 'entry', () => events.log.includes('B started'));
    expect(events.log).toEqual(['A started', 'A stopped', 'B started']);
    expect(a.leaseRole).toBe('standby');
    // A's receiver was told its window is over: Telegram starts no long poll in it.
    expect(windows[0]()).toBeLessThanOrEqual(0);
  });

  it('a receiver that does not start fails the start and leaves the lease free', async () => {
    const events = new Events();
    const a = leased('A', events, { failStart: true });
    await expect(a.start(handler)).rejects.toThrow('A cannot connect');
    const b = leased('B', events);
    await b.start(handler);
    expect(b.leaseRole).toBe('holding');
    // The half-started receiver was stopped before the lease was let go.
    expect(events.log).toEqual(['A stopped', 'B started']);
  });

  it('fences: an expired holder can neither renew nor release the lease of the next one', async () => {
    const keys = channelLeaseKeys('discord', BOT, t.keyPrefix);
    const lease = { channel: 'discord', botId: BOT, prefix: t.keyPrefix };
    const first = await acquireChannelLease(t.redis, lease, 'A', 60_000);
    expect(first).toBeGreaterThan(0);
    expect(await acquireChannelLease(t.redis, lease, 'B', 100)).toBeNull();
    // A's lease runs out (shortened here, so a slow machine cannot end it before B's refusal above).
    await t.redis.pexpire(keys.lease, 1);
    while ((await t.redis.exists(keys.lease)) === 1) await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await acquireChannelLease(t.redis, lease, 'B', 5_000);
    expect(second).toBe(first! + 1);
    expect(await renewChannelLease(t.redis, keys, first!, 5_000)).toBe(false);
    expect(await releaseChannelLease(t.redis, keys, first!)).toBe(false);
    expect(await t.redis.get(keys.lease)).toBe(String(second));
    expect((await readChannelLeases(t.redis, t.keyPrefix))[0]).toMatchObject({ channel: 'discord', holder: 'B', fence: second });
    expect(await releaseChannelLease(t.redis, keys, second!)).toBe(true);
    const [free] = await readChannelLeases(t.redis, t.keyPrefix);
    expect(free.holder).toBeUndefined();
  });

  it('shares the session lease\'s acquiring script: the channel lease records its holder, the session lease writes only its fence', async () => {
    const channel = channelLeaseKeys('telegram', BOT, t.keyPrefix);
    const fence = await acquireChannelLease(t.redis, { channel: 'telegram', botId: BOT, prefix: t.keyPrefix }, 'A', 5_000);
    const meta = await t.redis.hgetall(channel.meta);
    expect(meta).toMatchObject({ fence: String(fence), holder: 'A', holderFence: String(fence) });
    expect(Number(meta.heldSinceMs)).toBeGreaterThan(0);
    const session = sessionKeys('web:lease-script', t.keyPrefix);
    const token = await acquireLease(t.redis, session, 5_000);
    expect(token).toBe(1);
    expect(await t.redis.hgetall(session.meta)).toEqual({ fence: '1' });
    expect(await acquireLease(t.redis, session, 5_000)).toBeNull();
  });

  it('keeps the token out of Redis: the key names a hash of it', async () => {
    await acquireChannelLease(t.redis, { channel: 'telegram', botId: BOT, prefix: t.keyPrefix }, 'A', 5_000);
    const keys = await t.redis.keys(`${t.keyPrefix}*`);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.join(' ')).not.toContain('secret-token');
    expect(BOT).toMatch(/^[0-9a-f]{16}$/);
  });

  it('refuses bad options before writing anything', async () => {
    const keys = channelLeaseKeys('telegram', BOT, t.keyPrefix);
    await expect(acquireChannelLease(t.redis, { channel: 'telegram', botId: BOT, prefix: t.keyPrefix }, '', 5_000)).rejects.toThrow(/holder must be a non-empty string/);
    expect(await t.redis.exists(keys.lease, keys.meta)).toBe(0);
    expect(() => createLeasedChannel({ redis: t.redis, log: createSilentLogger(), sender: sender(), createReceiver: receiver(new Events(), 'A', []) }, { botId: BOT, keyPrefix: t.keyPrefix, ttlMs: 10 }))
      .toThrow('`ttlMs` must be an integer ≥ 100 (got 10)');
  });

  it('leases Telegram polling and Discord, but not the webhook mode (every gateway takes the POSTs) nor the web chat', async () => {
    const build = (webhookUrl?: string) => createChannels({ logger: createSilentLogger(), redis: t.redis }, {
      telegram: { token: '123456:secret-token', webhookUrl, webhookSecret: webhookUrl ? 'hook-secret' : undefined },
      discord: { token: 'discord-token-0123456789abcdef' }, host: '127.0.0.1', keyPrefix: t.keyPrefix,
    });
    const polling = await build();
    expect(polling.list.map((c) => [c.name, 'leaseRole' in c])).toEqual([['telegram', true], ['discord', true], ['web', false]]);
    expect(polling.leaseRoles?.()).toEqual({ telegram: 'standby', discord: 'standby' });
    const webhook = await build('https://bot.example.com/telegram/hook');
    expect(webhook.list.map((c) => [c.name, 'leaseRole' in c])).toEqual([['telegram', false], ['discord', true], ['web', false]]);
  });

  it('a standby gateway sends through Telegram and Discord without polling or a gateway connection', async () => {
    const telegram = await startFakeTelegram();
    const discord = await startFakeDiscord();
    try {
      const { list } = await createChannels({ logger: createSilentLogger(), redis: t.redis }, {
        telegram: { token: telegram.token, apiRoot: telegram.apiRoot }, discord: { token: discord.token, apiRoot: discord.apiRoot }, host: '0.0.0.0', keyPrefix: t.keyPrefix,
      });
      const [tg, dc] = list;
      await tg.send({ chatId: '42' }, { text: 'from the standby', mode: 'plain' });
      await dc.send({ chatId: FAKE_DISCORD_IDS.dmChannel }, { text: 'from the standby', mode: 'plain' });
      await dc.sendTyping({ chatId: FAKE_DISCORD_IDS.dmChannel });
      expect(telegram.callsOf('sendMessage').map((call) => call.params.text)).toEqual(['from the standby']);
      expect(telegram.callsOf('getUpdates')).toHaveLength(0);
      expect(discord.callsOf('POST', /\/messages$/).map((call) => call.body?.content)).toEqual(['from the standby']);
      expect(discord.identified).toBe(false);
    } finally {
      await telegram.close();
      await discord.close();
    }
  });
});
