import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli.js';
import type { CliIo } from '../../src/cli/context.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { claimInbox, deadLetterProcessing } from '../../src/redis/inbox.js';
import { acceptInbound } from '../../src/redis/ingest.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { acquireLease, releaseLease } from '../../src/redis/lease.js';
import { createRedisSessionView } from '../../src/redis/session-reader.js';
import { createTestRedis } from '../helpers/redis.js';

const SESSION = 'telegram:4242';

function inbound(n: number): InboundMessage {
  return {
    id: `telegram:4242:${n}`, channel: 'telegram', chatId: '4242', userId: '7', userName: 'ada',
    text: `message ${n}`, attachments: [], receivedAt: Date.UTC(2026, 0, 15, 9, 0, n),
  };
}

describe('chatgate failed / retry', () => {
  const t = createTestRedis();
  const keys = sessionKeys(SESSION, t.keyPrefix);
  let env: Record<string, string>;

  /** Runs the CLI in-process; returns the exit code and what it printed. */
  async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const io: CliIo = { out: (s) => out.push(s), err: (s) => err.push(s), env };
    const code = await runCli(['node', 'chatgate', ...args], { io });
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  const accept = (message: InboundMessage) => acceptInbound(t.redis, { sessionId: SESSION, message, keyPrefix: t.keyPrefix, nowMs: Date.now() });

  beforeAll(async () => {
    env = {
      REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix,
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'test-key', CHATGATE_MODEL: 'test-model', CHATGATE_CONTEXT_WINDOW: '4096', CHATGATE_RESERVED_OUTPUT_TOKENS: '0', CHATGATE_LOG_LEVEL: 'warn',
    };
    // A turn took messages 1 and 2, then failed for good: they are dead letters; message 3 came later.
    await accept(inbound(1));
    await accept(inbound(2));
    await claimInbox(t.redis, keys);
    const fence = (await acquireLease(t.redis, keys))!;
    expect(await deadLetterProcessing(t.redis, keys, fence, null)).toBe(2);
    await releaseLease(t.redis, keys, fence);
    await accept(inbound(3));
  });

  afterAll(() => t.cleanup());

  it('failed lists the dead letters oldest first, as text and JSON; the session detail counts them', async () => {
    const text = await cli('failed', SESSION);
    expect(text.code).toBe(0);
    expect(text.out.split('\n')).toEqual([
      '2026-01-15 09:00:01  ada [telegram:4242:1]: message 1',
      '2026-01-15 09:00:02  ada [telegram:4242:2]: message 2',
    ]);
    const json = await cli('failed', SESSION, '--json');
    expect((JSON.parse(json.out) as InboundMessage[]).map((m) => m.id)).toEqual(['telegram:4242:1', 'telegram:4242:2']);
    const reader = createRedisSessionView({ redis: t.redis }, { keyPrefix: t.keyPrefix, contextWindow: 4096 });
    expect((await reader.getSession(SESSION))?.failed).toBe(2);
  });

  it('an unknown session is exit 1 for failed and retry', async () => {
    const failed = await cli('failed', 'telegram:nobody');
    expect(failed.code).toBe(1);
    expect(failed.err).toContain('no session telegram:nobody');
    expect((await cli('retry', 'telegram:nobody')).code).toBe(1);
  });

  it('retry puts the dead letters back at the front of the inbox and enqueues a turn', async () => {
    const retried = await cli('retry', SESSION);
    expect(retried.code).toBe(0);
    expect(retried.out).toContain('2 failed messages back in the inbox');
    const inbox = (await t.redis.lrange(keys.inbox, 0, -1)).map((raw) => (JSON.parse(raw) as InboundMessage).id);
    expect(inbox).toEqual(['telegram:4242:1', 'telegram:4242:2', 'telegram:4242:3']);
    expect(await t.redis.llen(keys.failed)).toBe(0);
    const turns = new Queue('turns', { connection: t.redis, prefix: t.queuePrefix });
    try {
      const jobs = await turns.getJobs(['waiting', 'prioritized', 'delayed']);
      expect(jobs.map((job) => (job.data as { sessionId: string }).sessionId)).toEqual([SESSION]);
    } finally {
      await turns.close();
    }
    const reader = createRedisSessionView({ redis: t.redis }, { keyPrefix: t.keyPrefix, contextWindow: 4096 });
    expect((await reader.getSession(SESSION))?.failed).toBe(0);
    expect((await cli('failed', SESSION)).out).toBe('');
  });
});
