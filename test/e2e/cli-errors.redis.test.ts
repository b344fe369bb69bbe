/**
 * Small failures of the command line answered in one clear line: a port in use, a Redis that
 * refuses, an LLM key the endpoint refuses, a bot token the platform rejects (Telegram 401, Discord
 * "invalid token", through TELEGRAM_API_ROOT and DISCORD_API_ROOT to the fake servers), a reader that stops reading
 * (`chatgate transcript <s> | head`). None prints a stack or ioredis' "Unhandled error event".
 */
import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionKeys } from '../../src/redis/keys.js';
import { startFakeDiscord, type FakeDiscordServer } from '../fakes/discord-server.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import { closedPort, spawnChatgate, stopChatgate, type ChatgateProcess } from '../helpers/cli-process.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

describe('chatgate: small failures', () => {
  let t: TestRedis;
  let proc: ChatgateProcess | undefined;
  afterEach(async () => {
    await stopChatgate(proc);
    await t.cleanup();
  });
  /** No stack, no ioredis noise, no JSON error object with a stack, anywhere in the output. */
  const expectNoNoise = (p: ChatgateProcess) => {
    expect(p.stderr.text).not.toContain('Unhandled error event');
    expect(p.stderr.text).not.toMatch(/^\s+at /m);
    expect(p.stdout.text).not.toContain('"stack"');
  };
  const env = (extra: Record<string, string> = {}) => ({ REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, CHATGATE_LOG_LEVEL: 'info', ...extra });

  it('a port in use is one line naming the port and what to set, with no stack and no Redis noise', async () => {
    t = createTestRedis();
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const { port } = taken.address() as AddressInfo;
    try {
      proc = spawnChatgate(['gateway', '--demo'], env({ CHATGATE_HTTP_PORT: String(port) }));
      expect(await proc.exited).toBe(1);
    } finally {
      taken.close();
    }
    const failures = proc.stderr.text.split('\n').filter((line) => line.includes('failed to start'));
    expect(failures).toEqual([`chatgate: gateway failed to start: port ${port} on 127.0.0.1 is already in use (another chatgate or another program); set CHATGATE_HTTP_PORT to a free port (0: any free port)`]);
    expect(proc.stderr.text).not.toContain('Unhandled error event');
    expect(proc.stderr.text).not.toMatch(/^\s+at /m);
    expect(proc.stdout.text).not.toContain('"stack"');
  });

  it('a Redis that refuses the connection is one line naming REDIS_URL and what to do', async () => {
    t = createTestRedis();
    const port = await closedPort();
    proc = spawnChatgate(['gateway', '--demo'], env({ REDIS_URL: `redis://127.0.0.1:${port}`, CHATGATE_HTTP_PORT: '0' }));
    expect(await proc.exited).toBe(1);
    const lines = proc.stderr.text.split('\n').filter((line) => line.includes('REDIS_URL'));
    expect(lines).toEqual([`chatgate: REDIS_URL redis://127.0.0.1:${port} is not reachable (connect ECONNREFUSED 127.0.0.1:${port}); start Redis there or unset REDIS_URL to use a local one`]);
    expectNoNoise(proc);
  });

  it('an LLM key the endpoint refuses (401) says the key was refused, not that the endpoint does not answer', async () => {
    t = createTestRedis();
    const refusing = createHttpServer((_req, res) => res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"Incorrect API key provided"}}')).listen(0, '127.0.0.1');
    await once(refusing, 'listening');
    const baseUrl = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}/v1`;
    try {
      proc = spawnChatgate(['start'], env({ OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: 'sk-wrong-key-0123456789', CHATGATE_HTTP_PORT: '0' }));
      expect(await proc.exited).toBe(1);
    } finally {
      refusing.close();
    }
    const lines = proc.stderr.text.split('\n').filter((line) => line.includes('cannot use the LLM endpoint'));
    expect(lines).toEqual([`chatgate: cannot use the LLM endpoint: ${baseUrl} answered GET /models with HTTP 401: the API key was refused (check OPENAI_API_KEY).`]);
    expect(proc.stderr.text).not.toContain('sk-wrong-key');
    expectNoNoise(proc);
  });

  describe('bot tokens, through the configured API roots', () => {
    let telegram: FakeTelegramServer;
    let discord: FakeDiscordServer;
    afterEach(async () => {
      await telegram?.close();
      await discord?.close();
    });

    it('a gateway connects Telegram and Discord at TELEGRAM_API_ROOT and DISCORD_API_ROOT, and doctor checks both there', async () => {
      t = createTestRedis();
      [telegram, discord] = await Promise.all([startFakeTelegram(), startFakeDiscord()]);
      const roots = { TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_API_ROOT: telegram.apiRoot, DISCORD_BOT_TOKEN: discord.token, DISCORD_API_ROOT: discord.apiRoot, CHATGATE_HTTP_PORT: '0' };
      proc = spawnChatgate(['gateway', '--demo'], env(roots));
      await proc.waitFor('stderr', /chatgate gateway is running/);
      expect(telegram.callsOf('getMe').length).toBeGreaterThan(0);
      // The log line may reach stdout after the banner (pino writes asynchronously).
      await proc.waitFor('stdout', /"msg":"discord channel started"/);
      await stopChatgate(proc);
      proc = spawnChatgate(['doctor', '--json'], env({ ...roots, CHATGATE_DEMO: 'true' }));
      await proc.exited;
      const checks = (JSON.parse(proc.stdout.text) as { checks: Array<{ name: string; status: string; detail: string }> }).checks;
      expect(checks.find((c) => c.name === 'telegram')).toMatchObject({ status: 'ok', detail: 'token valid: bot @chatgate_test_bot' });
      expect(checks.find((c) => c.name === 'discord')).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^token valid: bot /) });
    });

    it('a Telegram token the Bot API rejects (401) is one line naming TELEGRAM_BOT_TOKEN and where to get a new one', async () => {
      t = createTestRedis();
      telegram = await startFakeTelegram();
      proc = spawnChatgate(['gateway', '--demo'], env({ TELEGRAM_BOT_TOKEN: '123456:WRONG-token', TELEGRAM_API_ROOT: telegram.apiRoot, CHATGATE_HTTP_PORT: '0' }));
      expect(await proc.exited).toBe(1);
      const failures = proc.stderr.text.split('\n').filter((line) => line.includes('failed to start'));
      expect(failures).toEqual(['chatgate: gateway failed to start: the telegram channel could not connect: TELEGRAM_BOT_TOKEN was rejected (401 Unauthorized): copy the token again from @BotFather (/mybots → API Token); with a local Bot API server, check TELEGRAM_API_ROOT']);
      expect(proc.stderr.text + proc.stdout.text).not.toContain('WRONG-token');
      expectNoNoise(proc);
    });

    it('`start` names what failed to start: the gateway and workers, not "start failed to start"', async () => {
      t = createTestRedis();
      telegram = await startFakeTelegram();
      proc = spawnChatgate(['start', '--demo'], env({ TELEGRAM_BOT_TOKEN: '123456:WRONG-token', TELEGRAM_API_ROOT: telegram.apiRoot, CHATGATE_HTTP_PORT: '0' }));
      expect(await proc.exited).toBe(1);
      const failures = proc.stderr.text.split('\n').filter((line) => line.includes('failed to start'));
      expect(failures).toEqual([expect.stringMatching(/^chatgate: the gateway and workers failed to start: the telegram channel could not connect: TELEGRAM_BOT_TOKEN was rejected/)]);
    });

    it('a Discord token the gateway rejects ("invalid token") is one line naming DISCORD_BOT_TOKEN and what to do', async () => {
      t = createTestRedis();
      discord = await startFakeDiscord();
      proc = spawnChatgate(['gateway', '--demo'], env({ DISCORD_BOT_TOKEN: 'wrong-token-wrong-token-wrong', DISCORD_API_ROOT: discord.apiRoot, CHATGATE_HTTP_PORT: '0' }));
      expect(await proc.exited).toBe(1);
      const failures = proc.stderr.text.split('\n').filter((line) => line.includes('failed to start'));
      expect(failures).toEqual(['chatgate: gateway failed to start: the discord channel could not connect: DISCORD_BOT_TOKEN was rejected (invalid token): reset it in the Discord developer portal (Bot → Reset Token), set it again and restart the gateway']);
      expectNoNoise(proc);
    });
  });

  it('`transcript | head` ends quietly when the reader stops reading', async () => {
    t = createTestRedis();
    const keys = sessionKeys('web:long', t.keyPrefix);
    const pipeline = t.redis.pipeline();
    for (let i = 0; i < 5000; i++) {
      const entry = { type: 'message', message: { role: 'user', content: `line ${i} ${'x'.repeat(200)}` }, tokens: 50, atMs: 1_700_000_000_000 + i };
      pipeline.xadd(keys.transcript, '*', 'data', JSON.stringify(entry));
    }
    await pipeline.exec();
    proc = spawnChatgate(['transcript', 'web:long'], env({ CHATGATE_LOG_LEVEL: 'warn' }));
    // `head -1`: read one chunk, then close the pipe.
    await once(proc.child.stdout, 'data');
    proc.child.stdout.destroy();
    expect(await proc.exited).toBe(0);
    expect(proc.stderr.text).not.toContain('EPIPE');
    expect(proc.stderr.text).not.toMatch(/^\s+at /m);
  });
});
