/**
 * A worker process with two test tools, for crash tests: `lookup` (no side effects) and `book`
 * (side-effecting). Each run of a tool is counted in Redis (`<prefix>runs:<tool>`, `book` pushes its
 * idempotency key). With BOOK_APPROVAL=ask, `book` asks the user first. With EFFECT_BLOCK=1, `book` signals `<prefix>signal:book-started` after its
 * effect and then never returns, so a test can SIGKILL the process right there.
 * Run (test/helpers/cli-worker.ts compiles it next to dist/): `node --import tsx test/helpers/effect-worker.ts` also works, with REDIS_URL, KEY_PREFIX, QUEUE_PREFIX, OPENAI_BASE_URL.
 */
import { Redis } from 'ioredis';
import { z } from 'zod';
import { createLogger } from '../../src/log.js';
import { runWorker } from '../../workers/main.js';
import { defineTool } from '../../workers/tools/types.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const prefix = env('KEY_PREFIX');
const redis = new Redis(env('REDIS_URL'), { maxRetriesPerRequest: null });

const lookup = defineTool({
  name: 'lookup', description: 'Looks up free slots.', schema: z.object({}),
  async run() {
    await redis.incr(`${prefix}runs:lookup`);
    return 'free: 9:30';
  },
});

const book = defineTool({
  name: 'book', description: 'Books a slot.', schema: z.object({ slot: z.string() }), sideEffects: true, timeoutMs: 600_000,
  approval: process.env.BOOK_APPROVAL === 'ask' ? 'ask' : 'auto',
  async run({ slot }, context) {
    await redis.rpush(`${prefix}runs:book`, context.idempotencyKey);
    if (process.env.EFFECT_BLOCK === '1') {
      await redis.rpush(`${prefix}signal:book-started`, '1');
      await new Promise(() => undefined);
    }
    return `booked ${slot}`;
  },
});

const worker = await runWorker({ redis: env('REDIS_URL'), tools: [lookup, book], logger: createLogger({ level: 'info' }) }, {
  keyPrefix: prefix, queuePrefix: env('QUEUE_PREFIX'), queueShards: Number(process.env.QUEUE_SHARDS ?? '1'), contextWindow: 16_000,
  llm: { baseURL: env('OPENAI_BASE_URL'), apiKey: 'test-key', model: 'gpt-4o-mini', retry: { baseDelayMs: 5, maxRetries: 2 } },
  leaseTtlMs: 1500, lockDurationMs: 1500, concurrency: 2,
});
process.once('SIGTERM', () => {
  void worker.close().then(() => redis.quit()).then(() => process.exit(0));
});
