/**
 * Startup and shutdown of the real entry point: a channel that cannot connect makes a bounded start
 * fail naming it; a signal is honoured while the start still waits; /readyz is not ready until
 * the channels run; an open web chat stream does not keep the process alive.
 */
import { Agent, get } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { closedPort, spawnChatgate, startSilentServer, stopChatgate, type ChatgateProcess } from '../helpers/cli-process.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const TOKEN = '123456789:AAFakeTokenForTests_0123456789abcdef';

describe('chatgate gateway: startup and shutdown', () => {
  let t: TestRedis | undefined;
  let proc: ChatgateProcess | undefined;
  let silent: Awaited<ReturnType<typeof startSilentServer>> | undefined;

  afterEach(async () => {
    await stopChatgate(proc);
    await silent?.close();
    await t?.cleanup();
    proc = silent = t = undefined;
  });

  const env = (extra: Record<string, string>): Record<string, string> => {
    t = createTestRedis();
    return { REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, CHATGATE_LOG_LEVEL: 'warn', ...extra };
  };

  it('honours SIGTERM while Telegram does not answer, and is not ready meanwhile', async () => {
    silent = await startSilentServer();
    const port = await closedPort();
    proc = spawnChatgate(['gateway', '--demo'], env({
      TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: silent.url, CHATGATE_HTTP_PORT: String(port), CHATGATE_CHANNEL_START_TIMEOUT_MS: '600000',
    }));
    await proc.waitFor('stderr', /connecting the telegram channel/);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ checks: { channels: expect.stringContaining('telegram') } });
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(1);
    expect(proc.stderr.text).toContain('SIGTERM');
  });

  it('fails a bounded start naming the channel that cannot connect, with advice', async () => {
    silent = await startSilentServer();
    proc = spawnChatgate(['gateway', '--demo'], env({
      TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: silent.url, CHATGATE_HTTP_PORT: '0', CHATGATE_CHANNEL_START_TIMEOUT_MS: '1000',
    }));
    expect(await proc.exited).toBe(1);
    expect(proc.stderr.text).toMatch(/the telegram channel did not connect within 1 s/);
    expect(proc.stderr.text).toContain('TELEGRAM_API_ROOT');
  });

  it('stops with a web chat event stream open', async () => {
    proc = spawnChatgate(['gateway', '--demo'], env({ CHATGATE_HTTP_PORT: '0' }));
    const { webChatUrl: chatUrl } = await proc.ready();
    // Like the page's EventSource: one keep-alive connection, reconnecting as soon as a stream ends.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let open = true;
    const connect = (): Promise<void> => new Promise((resolve) => {
      const req = get(`${new URL(chatUrl).origin}/api/chat/open-tab/events`, { agent }, (res) => {
        res.once('data', () => resolve());
        res.on('end', () => { if (open) void connect(); });
        res.on('error', () => undefined);
      });
      req.on('error', () => resolve());
    });
    await connect(); // the first stream is open and flowing
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
    open = false;
    agent.destroy();
    expect(proc.stderr.text).toContain('stopped');
  });
});
