/**
 * A revoked Discord bot token (the REST API answers 401): a permanent failure. The gateway stops
 * trying — the reply that met the 401 and every later one fail for good at their first attempt,
 * into the failed set — and says so once in its log and in `chatgate status` (the token fix).
 * A real gateway on real Redis, its Discord channel built as `chatgate gateway` builds it (leased),
 * against the fake Discord.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayOptions } from '../../src/cli/compose.js';
import { buildStatusReport } from '../../src/cli/status-report.js';
import type { OutboundMessage } from '../../src/core/inbound.js';
import { loadConfig } from '../../src/config.js';
import { createChannels } from '../../src/gateway/channels.js';
import { startGateway, type GatewayHandle } from '../../src/gateway/index.js';
import { MemorySessionView } from '../../src/monitor/index.js';
import { readHeartbeats } from '../../src/redis/heartbeats.js';
import { openOutboundQueue, type OutboundQueue } from '../../src/outbound/outbound-queue.js';
import type { FailedReply } from '../../src/outbound/outbound-shard.js';
import { FAKE_DISCORD_IDS as IDS, startFakeDiscord, type FakeDiscordServer } from '../fakes/discord-server.js';
import { createLogSink } from '../helpers/log-sink.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

let t: TestRedis | undefined;
let gateway: GatewayHandle | undefined;
let discord: FakeDiscordServer | undefined;

afterEach(async () => {
  await gateway?.close();
  await discord?.close();
  await t?.cleanup();
  gateway = discord = t = undefined;
});

const reply = (n: number): OutboundMessage => ({
  id: `reply-${n}`, sessionId: `discord:${IDS.dmChannel}`, channel: 'discord', chatId: IDS.dmChannel, text: `answer ${n}`, kind: 'reply',
});

/** Polls (50 ms apart; the test's timeout bounds it) until `read` gives a value `accept` takes. */
async function until<T>(read: () => Promise<T>, accept: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('discord: a revoked bot token', () => {
  it('fails the replies for good at once, logs it once and shows the token fix in status', async () => {
    t = createTestRedis();
    discord = await startFakeDiscord();
    const sink = createLogSink();
    const config = loadConfig({
      ...t.env, CHATGATE_HTTP_PORT: '0',
      OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    });
    const channels = await createChannels({ logger: sink.logger, redis: t.redis }, { discord: { token: discord.token, apiRoot: discord.apiRoot }, host: '0.0.0.0', keyPrefix: t.keyPrefix });
    gateway = await startGateway({ redis: t.redis, logger: sink.logger, sessions: new MemorySessionView(), channels }, { ...gatewayOptions(config), heartbeatTtlMs: 300 });
    const queue: OutboundQueue = openOutboundQueue(t.redis, { queuePrefix: t.queuePrefix, queueShards: config.redis.queueShards, outboundQueue: 'outbound' });
    const failed = (count: number) => until(() => queue.failed(), (list: FailedReply[]) => list.length >= count);

    await queue.add(reply(0));
    await until(async () => discord!.callsOf('POST', /\/messages$/).length, (n) => n === 1);
    discord.revokeToken();
    await queue.add(reply(1));
    await failed(1);
    await queue.add(reply(2));
    const [second, first] = await failed(2);

    expect([first, second].map((f) => [f!.id, f!.attempts])).toEqual([['reply-1', 1], ['reply-2', 1]]);
    expect(first!.reason).toMatch(/^createMessage failed for discord:\d+ \(401: Unauthorized/);
    expect(second!.reason).toMatch(/the bot token was refused \(401 Unauthorized\): a new token is needed/);
    expect(await queue.counts()).toMatchObject({ delayed: 0, waiting: 0 });
    const refusals = sink.lines.filter((line) => line.msg.startsWith('discord refused the bot token'));
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatchObject({ level: 50 });

    // The heartbeat carries it to status, with what to do.
    await until(async () => (await readHeartbeats(t!.redis, { keyPrefix: t!.keyPrefix })).processes, (beats) => beats.some((b) => b.gateway?.channels?.discord?.tokenRejected === true));
    const check = (await buildStatusReport(config, t.redis)).checks.find((c) => c.name === 'channels')!;
    expect(check).toMatchObject({ status: 'down', detail: expect.stringMatching(/^discord disconnected for \d+ s \(Discord refused the bot token \(401 Unauthorized\)/) });
    expect(check.fix).toMatch(/^DISCORD_BOT_TOKEN was rejected .*Reset Token.*restart the gateway$/);
  });
});
