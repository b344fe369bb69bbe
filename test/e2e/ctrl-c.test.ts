/**
 * One Ctrl+C on `npm start`, as a terminal sends it: SIGINT to the whole foreground process group,
 * so npm and chatgate both receive it and npm forwards its own copy. It must be one graceful stop
 * (the reply being written is finished and delivered), not "SIGINT again: exiting now".
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestRedis } from '../helpers/redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('Ctrl+C on npm start', () => {
  const t = createTestRedis();
  afterAll(() => t.cleanup());

  it('one SIGINT to the process group stops gracefully, exit 0, and the reply being written is finished', async () => {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', REDIS_URL: t.url,
      CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, CHATGATE_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'warn',
      // Slow demo words: the press lands while the reply is being written.
      CHATGATE_DEMO_WORD_DELAY_MS: '60',
    };
    // Its own process group, as a terminal's foreground job: `-pid` signals npm and chatgate together.
    const npm = spawn('npm', ['start', '--silent', '--', '--no-dotenv', '--demo'], { cwd: ROOT, env, detached: true });
    let stderr = '';
    npm.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    npm.stdout.resume();
    const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
    try {
      await until(() => stderr.includes('Press Ctrl+C to stop.'), () => stderr);
      const chatUrl = /^Web chat: +(http:\/\/\S+)$/m.exec(stderr)![1]!;
      const base = new URL(chatUrl).origin;
      const posted = await fetch(`${base}/api/chat/ctrl-c/messages`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'Tell me about compaction', clientMessageId: 'm1' }),
      });
      expect(posted.status).toBe(202);
      // The turn has started streaming when the session's lease is held.
      await until(async () => (await t.redis.exists(`${t.keyPrefix}{web:ctrl-c}:lease`)) === 1, () => stderr);
      process.kill(-npm.pid!, 'SIGINT');
      // On failure, the output says which step of the stop did not finish.
      expect(await exited, stderr).toBe(0);
    } finally {
      if (npm.exitCode === null) process.kill(-npm.pid!, 'SIGKILL');
    }
    expect(stderr).not.toContain('exiting now');
    expect(stderr).toContain('chatgate: stopped');
    // The turn that was running committed its reply before the worker stopped.
    const transcript = await t.redis.xrange(`${t.keyPrefix}{web:ctrl-c}:transcript`, '-', '+');
    expect(transcript.some(([, fields]) => fields.join(' ').includes('[demo model]'))).toBe(true);
  });
});

/** Resolves when `check` holds; polls every 50 ms for at most 60 s. */
async function until(check: () => boolean | Promise<boolean>, context: () => string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`condition not met; output so far:\n${context()}`);
}
