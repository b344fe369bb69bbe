/**
 * Two real `chatgate gateway` processes on one Redis with Telegram and Discord (fake servers) and a
 * real worker: Telegram polling and the Discord connection run in the gateway holding the channel
 * lease; the other stands by (and is ready). SIGKILL of the holder during a burst of Telegram
 * messages: the other takes over once the lease expires, every message is answered exactly once,
 * and Telegram never sees two pollers (no 409). SIGTERM: the hand-over is immediate (the lease is
 * released; the test's lease is a minute long, so waiting for expiry would time the test out).
 * A stall (SIGSTOP past the lease): the stalled holder's last long poll ends inside its lease, so
 * the taker's polls never overlap it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StatusReport } from '../../src/cli/status-report.js';
import { readChannelLeases } from '../../src/redis/channel-lease.js';
import { FAKE_DISCORD_IDS, startFakeDiscord, type FakeDiscordServer } from '../fakes/discord-server.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import { spawnChatgate, stopChatgate, type ChatgateProcess } from '../helpers/cli-process.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { waitUntil } from '../helpers/waits.js';

/** Each test starts three or four real processes: on a loaded machine that alone may take a minute. */
const PROCESS_TEST_TIMEOUT_MS = 180_000;
/** Replies a gateway delivers at once (the outbound consumer's default concurrency). */
const OUTBOUND_CONCURRENCY = 8;
/** The end of a streamed preview (a reply still being written). */
const STREAM_CURSOR = '▍';

describe('several gateways: the channel lease fails over', () => {
  let t: TestRedis;
  let telegram: FakeTelegramServer;
  let discord: FakeDiscordServer;
  const procs: ChatgateProcess[] = [];

  beforeEach(async () => {
    t = createTestRedis();
    telegram = await startFakeTelegram();
    discord = await startFakeDiscord();
  });
  afterEach(async () => {
    for (const proc of procs.splice(0)) {
      if (proc.child.signalCode === 'SIGSTOP') proc.child.kill('SIGCONT');
      await stopChatgate(proc);
    }
    await telegram.close();
    await discord.close();
    await t.cleanup();
  });

  const env = (leaseMs: number): Record<string, string> => ({
    REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, CHATGATE_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'info',
    TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_API_ROOT: telegram.apiRoot, DISCORD_BOT_TOKEN: discord.token, DISCORD_API_ROOT: discord.apiRoot,
    CHATGATE_CHANNEL_LEASE_MS: String(leaseMs), CHATGATE_RATE_LIMIT_PER_MINUTE: '0',
    // Replies still stream (a preview, then the final), in a tenth of the demo's pace.
    CHATGATE_DEMO_WORD_DELAY_MS: '3',
  });
  const start = async (role: 'gateway' | 'worker', leaseMs: number): Promise<ChatgateProcess> => {
    const proc = spawnChatgate([role, '--demo'], env(leaseMs));
    procs.push(proc);
    await proc.ready();
    return proc;
  };
  const holders = async (): Promise<Record<string, string | undefined>> =>
    Object.fromEntries((await readChannelLeases(t.redis, t.keyPrefix)).map((row) => [row.channel, row.holder?.split(':').at(-1)]));
  /** Waits (on Redis, not on a clock) until both channels are held by `proc`. */
  const heldBy = async (proc: ChatgateProcess): Promise<void> => {
    const pid = String(proc.child.pid);
    for (;;) {
      const now = await holders();
      if (now.telegram === pid && now.discord === pid) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const readyz = async (proc: ChatgateProcess): Promise<{ status: string; channelLeases: Record<string, string> }> => {
    const base = /^Dashboard: +(http:\/\/\S+)\/dashboard$/m.exec(proc.stderr.text)![1];
    return (await (await fetch(`${base}/readyz`)).json()) as { status: string; channelLeases: Record<string, string> };
  };
  /** Starts a worker and two gateways; returns [holder, standby]. */
  const startPair = async (leaseMs: number): Promise<[ChatgateProcess, ChatgateProcess]> => {
    const [, first] = await Promise.all([start('worker', leaseMs), start('gateway', leaseMs)]);
    await heldBy(first);
    const second = await start('gateway', leaseMs);
    return [first, second];
  };
  const pushBurst = (from: number, to: number): void => {
    for (let i = from; i < to; i++) telegram.pushMessage({ text: `burst${i}x`, chat: { id: 5000 + i, type: 'private' }, from: { id: 5000 + i, is_bot: false, first_name: 'P' } });
  };
  // Replies stream (a preview edited into the final reply): count the messages as they read now.
  const telegramReplies = (i: number) => [...telegram.messages].filter(([key, text]) => key.startsWith(`${5000 + i}:`) && text.includes(`burst${i}x`)).map(([, text]) => text);
  const isFinal = (text: string) => !text.includes(STREAM_CURSOR);
  const allAnswered = (n: number) => Array.from({ length: n }, (_, i) => i).every((i) => telegramReplies(i).some(isFinal));
  const discordReplies = (text: string) => [...discord.messages.values()].filter((content) => content.includes(text));
  const dm = async (text: string): Promise<void> => {
    discord.dispatchMessage({ content: text, where: 'dm', author: { id: FAKE_DISCORD_IDS.user, username: 'ada' } });
    await waitUntil(discord, 'call', () => discordReplies(text).some(isFinal));
  };
  /**
   * After SIGKILL: each answered; twice only a reply the killed gateway was sending (Telegram has no
   * idempotency key; docs/operating.md): at most one per delivery slot, 8 by default.
   */
  const expectEachOnceButInFlight = async (n: number): Promise<void> => {
    await waitUntil(telegram, 'call', () => allAnswered(n));
    const counts = Array.from({ length: n }, (_, i) => telegramReplies(i).filter(isFinal).length);
    expect(counts.every((count) => count === 1 || count === 2), JSON.stringify(counts)).toBe(true);
    expect(counts.filter((count) => count === 2).length).toBeLessThanOrEqual(OUTBOUND_CONCURRENCY);
    expect(telegram.getUpdatesConflicts).toBe(0);
  };
  const expectEachOnce = async (n: number): Promise<void> => {
    await waitUntil(telegram, 'call', () => allAnswered(n));
    // A preview left behind by a gateway killed mid-stream still ends in the writing mark: not an answer.
    for (let i = 0; i < n; i++) expect(telegramReplies(i).filter(isFinal), `burst${i}x: ${JSON.stringify(telegramReplies(i))}`).toHaveLength(1);
    expect(telegram.getUpdatesConflicts).toBe(0);
  };

  it('SIGKILL of the holder during a burst: the standby takes over, nothing lost (Discord\'s gap caught up), nothing answered twice, no 409', async () => {
    const [a, b] = await startPair(3_000);
    expect(await readyz(a)).toMatchObject({ status: 'ready', channelLeases: { telegram: 'holding', discord: 'holding' } });
    expect(await readyz(b)).toMatchObject({ status: 'ready', channelLeases: { telegram: 'standby', discord: 'standby' } });
    await dm('discord before the kill');
    pushBurst(0, 10);
    await waitUntil(telegram, 'call', () => telegramReplies(0).some(isFinal));
    a.child.kill('SIGKILL');
    pushBurst(10, 20);
    // Discord sends nothing again to the next connection: the new holder catches this up over REST.
    discord.dispatchMessage({ content: 'discord during the gap', where: 'dm', author: { id: FAKE_DISCORD_IDS.user, username: 'ada' } });
    await heldBy(b);
    pushBurst(20, 30);
    await expectEachOnceButInFlight(30);
    await waitUntil(discord, 'call', () => discordReplies('discord during the gap').some(isFinal));
    await dm('discord after the kill');
    // The reply delivered before the kill stays final, in one message (no preview of either gateway lands on it).
    expect(discordReplies('discord before the kill')).toEqual([expect.not.stringContaining(STREAM_CURSOR)]);
    expect(discordReplies('discord after the kill').filter(isFinal)).toHaveLength(1);
    expect(discordReplies('discord during the gap').filter(isFinal)).toHaveLength(1);
    expect(discord.callsOf('GET', new RegExp(`^/channels/${FAKE_DISCORD_IDS.dmChannel}/messages$`)).length).toBeGreaterThanOrEqual(1);
    expect(discord.maxOpenSessions).toBe(1);
    expect(await readyz(b)).toMatchObject({ channelLeases: { telegram: 'holding', discord: 'holding' } });
    // `chatgate status` names the holder of each channel.
    const status = spawnChatgate(['status', '--json'], env(3_000));
    await status.exited;
    const report = JSON.parse(status.stdout.text) as StatusReport;
    expect(report.channelLeases.map((row) => [row.channel, row.holder?.split(':').at(-1)]).sort()).toEqual([['discord', String(b.child.pid)], ['telegram', String(b.child.pid)]]);
    expect(report.checks.find((c) => c.name === 'leases')).toMatchObject({ status: 'ok', detail: expect.stringContaining(`telegram (bot `) });
  }, PROCESS_TEST_TIMEOUT_MS);

  it('SIGTERM hands over at once (a lease of a minute is not waited out)', async () => {
    const [a, b] = await startPair(60_000);
    pushBurst(0, 10);
    await waitUntil(telegram, 'call', () => telegramReplies(0).some(isFinal));
    a.child.kill('SIGTERM');
    pushBurst(10, 20);
    expect(await a.exited).toBe(0);
    await heldBy(b);
    await expectEachOnce(20);
    await dm('discord after the hand-over');
    expect(discordReplies('discord after the hand-over').filter(isFinal)).toHaveLength(1);
    expect(discord.maxOpenSessions).toBe(1);
  }, PROCESS_TEST_TIMEOUT_MS);

  it('a holder stalled past its lease: the taker polls only after the stalled long poll ended, and the stalled one stops on waking', async () => {
    const [a, b] = await startPair(3_000);
    a.child.kill('SIGSTOP');
    await heldBy(b);
    pushBurst(0, 5);
    await waitUntil(telegram, 'call', () => allAnswered(5));
    a.child.kill('SIGCONT');
    // Awake again, it gives the channels up instead of polling (it still sends, and is still ready).
    await a.waitFor('stdout', /channel lease given up/);
    pushBurst(5, 10);
    await expectEachOnce(10);
    expect((await readyz(a)).channelLeases).toEqual({ telegram: 'standby', discord: 'standby' });
  }, PROCESS_TEST_TIMEOUT_MS);
});
