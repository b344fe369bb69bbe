/**
 * A channel that loses its platform after connecting shows as down, with the platform's reason,
 * on every surface — the gateway's heartbeat, `chatgate status` (buildStatusReport), `/readyz` and
 * the dashboard's `/api/channels` — and as up again once it recovers. Real gateways on real Redis,
 * against the fake Telegram (getUpdates answering 502, then 401, for a while) and the fake Discord
 * (the gateway connection closed with a resumable code, reconnects refused for a while).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Channel } from '../../channels/channel.js';
import { createDiscordChannel } from '../../channels/discord/index.js';
import { createTelegramChannel } from '../../channels/telegram/index.js';
import { gatewayOptions } from '../../src/cli/compose.js';
import { buildStatusReport } from '../../src/cli/status-report.js';
import { loadConfig, type Config } from '../../src/config.js';
import { startGateway, type GatewayHandle } from '../../src/gateway/index.js';
import { createSilentLogger } from '../../src/log.js';
import { MemorySessionView, type ChannelsPanel } from '../../src/monitor/index.js';
import { readHeartbeats, type ChannelHealthBeat } from '../../src/redis/heartbeats.js';
import { startFakeDiscord, type FakeDiscordServer } from '../fakes/discord-server.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { waitUntil } from '../helpers/waits.js';

let t: TestRedis | undefined;
let gateway: GatewayHandle | undefined;
let telegram: FakeTelegramServer | undefined;
let discord: FakeDiscordServer | undefined;

afterEach(async () => {
  await gateway?.close();
  await telegram?.close();
  await discord?.close();
  await t?.cleanup();
  gateway = telegram = discord = t = undefined;
});

/** A gateway running `channel`, beating every 100 ms; the LLM endpoint refuses at once (status probes it). */
async function startWith(channel: Channel): Promise<{ config: Config; t: TestRedis }> {
  t = createTestRedis();
  const config = loadConfig({
    REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, CHATGATE_HTTP_PORT: '0',
    OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
  });
  const options = { ...gatewayOptions(config), heartbeatTtlMs: 300 };
  gateway = await startGateway({ redis: t.redis, logger: createSilentLogger(), sessions: new MemorySessionView(), channels: { list: [channel] } }, options);
  return { config, t };
}

/** The channel's health in this gateway's latest beat, once `accept` takes it (checked at every beat read, 50 ms apart). */
async function beatUntil(name: string, accept: (health: ChannelHealthBeat) => boolean): Promise<ChannelHealthBeat> {
  for (;;) {
    const beat = (await readHeartbeats(t!.redis, { keyPrefix: t!.keyPrefix })).processes.find((b) => b.role === 'gateway');
    const health = beat?.gateway?.channels[name];
    if (health && accept(health)) return health;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function surfaces(config: Config) {
  const report = await buildStatusReport(config, t!.redis);
  const ready = (await (await fetch(`${gateway!.httpUrl}/readyz`)).json()) as { checks: Record<string, string> };
  const panel = (await (await fetch(`${gateway!.httpUrl}/api/channels`)).json()) as ChannelsPanel;
  return { channels: report.checks.find((c) => c.name === 'channels')!, readyz: ready.checks.channels!, panel };
}

describe('channel health: Telegram long polling', () => {
  const start = async () => {
    telegram = await startFakeTelegram();
    const channel = createTelegramChannel({}, { token: telegram.token, apiRoot: telegram.apiRoot, pollTimeoutSeconds: 1, redeliveryDelayMs: 20, maxPollBackoffMs: 100 });
    return { channel, ...(await startWith(channel)) };
  };

  it('getUpdates answering 502 again and again: down with the reason on every surface, up again at the first answer', async () => {
    const { channel, config } = await start();
    expect((await surfaces(config)).channels).toMatchObject({ status: 'ok', detail: 'telegram connected' });
    let failing = true;
    telegram!.failNext('getUpdates', { errorCode: 502, description: 'Bad Gateway' }, { times: 10_000, when: () => failing });
    // Health is read when the next poll arrives: the one after the second failure finds it down.
    await waitUntil(telegram!, 'call', () => !channel.health().ok);
    expect(channel.health()).toMatchObject({ ok: false, reason: 'getUpdates failed (502: Bad Gateway) (2 times in a row)' });
    const beat = await beatUntil('telegram', (h) => h.state === 'disconnected');
    expect(beat).toMatchObject({ state: 'disconnected', reason: expect.stringMatching(/^getUpdates failed \(502: Bad Gateway\) \(\d+ times in a row\)$/), sinceMs: expect.any(Number) });
    expect(beat.tokenRejected).toBeUndefined();
    const down = await surfaces(config);
    expect(down.channels).toMatchObject({ status: 'down', detail: expect.stringMatching(/^telegram disconnected for \d+ s \(getUpdates failed \(502: Bad Gateway\) \(\d+ times in a row\)\)$/) });
    expect(down.channels.fix).toMatch(/^telegram lost its platform after connecting and keeps trying: check the route to the Bot API .*TELEGRAM_API_ROOT/);
    expect(down.readyz).toMatch(/^telegram disconnected for \d+ s \(getUpdates failed \(502: Bad Gateway\)/);
    // The panel is the same judgement of a later beat (the failures go on counting meanwhile).
    expect(down.panel).toMatchObject({ status: 'down', fix: down.channels.fix, rows: [{ channel: 'telegram', state: 'disconnected', sinceMs: beat.sinceMs }] });
    expect(down.panel.detail).toMatch(/^telegram disconnected for \d+ s \(getUpdates failed \(502: Bad Gateway\) \(\d+ times in a row\)\)$/);
    failing = false;
    await waitUntil(telegram!, 'call', () => channel.health().ok);
    await beatUntil('telegram', (h) => h.state === 'connected');
    const up = await surfaces(config);
    expect(up.channels).toMatchObject({ status: 'ok', detail: 'telegram connected' });
    expect(up.readyz).toBe('ok');
    expect(up.panel).toMatchObject({ status: 'ok', rows: [{ channel: 'telegram', state: 'connected' }] });
  });

  it('a revoked token (401): down at the first refusal with the token fix; polling goes on and recovers', async () => {
    const { channel, config } = await start();
    await telegram!.waitForCall('getUpdates');
    let refusing = true;
    telegram!.failNext('getUpdates', { errorCode: 401, description: 'Unauthorized' }, { times: 10_000, when: () => refusing });
    await waitUntil(telegram!, 'call', () => !channel.health().ok);
    expect(channel.health()).toMatchObject({ ok: false, reason: 'getUpdates failed (401: Unauthorized)', tokenRejected: true });
    await beatUntil('telegram', (h) => h.state === 'disconnected');
    const down = await surfaces(config);
    expect(down.channels.status).toBe('down');
    expect(down.channels.fix).toMatch(/^TELEGRAM_BOT_TOKEN was rejected \(401 Unauthorized\): copy the token again from @BotFather/);
    // Polling did not give up: it keeps asking (with backoff) and answers again once the token works.
    const asked = telegram!.callsOf('getUpdates').length;
    await waitUntil(telegram!, 'call', () => telegram!.callsOf('getUpdates').length >= asked + 2);
    refusing = false;
    await waitUntil(telegram!, 'call', () => channel.health().ok);
    await beatUntil('telegram', (h) => h.state === 'connected');
    expect((await surfaces(config)).channels).toMatchObject({ status: 'ok', detail: 'telegram connected' });
  });
});

describe('channel health: Discord gateway connection', () => {
  it('closed with a resumable code and refused for a while: down with the close code, then resumed and up', async () => {
    discord = await startFakeDiscord();
    const channel = createDiscordChannel({}, { token: discord.token, apiRoot: discord.apiRoot, readyTimeoutMs: 10_000 });
    const { config } = await startWith(channel);
    expect((await surfaces(config)).channels).toMatchObject({ status: 'ok', detail: 'discord connected' });
    discord.refuseGateway(true);
    discord.closeGateway(4000, 'Unknown error');
    const beat = await beatUntil('discord', (h) => h.state === 'disconnected');
    expect(beat.reason).toMatch(/^gateway connection closed \(close code \d+(: \w+)?\); reconnecting/);
    const down = await surfaces(config);
    expect(down.channels).toMatchObject({ status: 'down', detail: expect.stringMatching(/^discord disconnected for \d+ s \(gateway connection closed \(close code \d+/) });
    expect(down.channels.fix).toMatch(/^discord lost its platform after connecting and keeps trying: check the route to discord\.com/);
    expect(down.readyz).toMatch(/^discord disconnected/);
    expect(down.panel.rows).toMatchObject([{ channel: 'discord', state: 'disconnected' }]);
    discord.refuseGateway(false);
    await beatUntil('discord', (h) => h.state === 'connected');
    // It resumed the session (op 6) rather than identifying again.
    expect(discord.gatewayReceived.filter((p) => p.op === 2)).toHaveLength(1);
    expect(discord.gatewayReceived.some((p) => p.op === 6)).toBe(true);
    const up = await surfaces(config);
    expect(up.channels).toMatchObject({ status: 'ok', detail: 'discord connected' });
    expect(up.readyz).toBe('ok');
  });
});
