/**
 * Small failures of the command line answered in one clear line: a port in use, a reader that
 * stops reading (`chatgate transcript <s> | head`).
 */
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionKeys } from '../../src/redis/keys.js';
import { spawnChatgate, stopChatgate, type ChatgateProcess } from '../helpers/cli-process.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

describe('chatgate: small failures', () => {
  let t: TestRedis;
  let proc: ChatgateProcess | undefined;
  afterEach(async () => {
    await stopChatgate(proc);
    await t.cleanup();
  });
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
