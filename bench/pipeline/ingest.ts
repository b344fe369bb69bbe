/**
 * In-process ingest against raw BullMQ `queue.add`, same Redis, same run: the gateway's whole
 * ingest (dedupe, allow-list, rate limit, accept, hygiene check, turn enqueue — built as
 * src/gateway/index.ts builds it) against a plain `add` of a turn-sized job, at concurrency 1 and 50.
 * Nothing consumes the queues; each figure uses its own key and queue prefix, removed afterwards.
 */
import { Queue } from 'bullmq';
import type { InboundMessage } from '../../src/core/inbound.js';
import { createIngest, type Ingest } from '../../src/gateway/ingest.js';
import { createSilentLogger } from '../../src/log.js';
import { openOutboundQueue } from '../../src/outbound/outbound-queue.js';
import { createTurnProducer } from '../../src/queue/producer.js';
import { duplicateRedis, type RedisClient } from '../../src/redis/client.js';
import { createRedisSessionView } from '../../src/redis/session-reader.js';
import { createSessionStore } from '../../src/redis/session-store.js';
import { createLlmSessionOps } from '../../src/session/session-ops.js';
import { buildOneScript } from './one-script.js';
import { commandStats, resetStats, type BenchRedis } from './redis.js';

const REPEATS = 3;

/** One measured figure. */
export interface IngestFigure {
  what: 'ingest' | 'queue.add' | 'one-script';
  concurrency: number;
  perSecond: number;
  /** Redis commands per message (INFO commandstats, including those inside scripts). */
  commands: number;
}

const LIMITS = { model: 'gpt-4o-mini', summaryModel: 'gpt-4o-mini', contextWindow: 128_000, reservedOutputTokens: 4096 };

/**
 * Runs the figures (raw add, ingest, the one-script prototype of ./one-script.ts, at concurrency 1
 * and 50) over `messages` messages each (500 sessions), three times interleaved; the best of each.
 */
export async function runIngestComparison(redis: BenchRedis, base: RedisClient, llmBaseURL: string, messages: number): Promise<IngestFigure[]> {
  const figures: IngestFigure[] = [];
  let round = 0;
  // Interleaved and repeated, the best of each kept: other load on the machine slows single runs.
  for (let rep = 0; rep < REPEATS; rep++) {
    for (const concurrency of [1, 50]) {
      for (const what of ['queue.add', 'ingest', 'one-script'] as const) {
        const figure = await measureOnce(redis, base, llmBaseURL, { what, concurrency, messages: Math.ceil(messages / REPEATS), prefix: `bench-ingest-${process.pid}-${round++}` });
        const best = figures.find((f) => f.what === what && f.concurrency === concurrency);
        if (!best) figures.push(figure);
        else if (figure.perSecond > best.perSecond) Object.assign(best, figure);
      }
    }
  }
  return figures;
}

async function measureOnce(redis: BenchRedis, base: RedisClient, llmBaseURL: string, run: { what: IngestFigure['what']; concurrency: number; messages: number; prefix: string }): Promise<IngestFigure> {
  const { what, concurrency, messages, prefix } = run;
  const subject = what === 'ingest' ? buildIngest(base, prefix, llmBaseURL) : what === 'one-script' ? buildOneScript(base, prefix) : buildRawAdd(base, prefix);
  await subject.send(0); // connections and scripts loaded before the clock starts
  await resetStats(redis.admin);
  const started = performance.now();
  let next = 1;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next <= messages) await subject.send(next++);
  }));
  await subject.settle();
  const seconds = (performance.now() - started) / 1000;
  const calls = (await commandStats(redis.admin)).filter((s) => !['config', 'info'].includes(s.command)).reduce((sum, s) => sum + s.calls, 0);
  await subject.close();
  await removeKeys(redis, prefix);
  return { what, concurrency, perSecond: messages / seconds, commands: calls / messages };
}

interface Subject {
  send(n: number): Promise<void>;
  /** Waits for work that continues after `send` resolved (ingest's hygiene and turn enqueue). */
  settle(): Promise<void>;
  close(): Promise<void>;
}

function buildRawAdd(base: RedisClient, prefix: string): Subject {
  const connection = duplicateRedis(base, { maxRetriesPerRequest: 2, commandTimeout: 750 });
  const queue = new Queue('turns', { connection, prefix: `{${prefix}q}` });
  return {
    send: async (n) => { await queue.add('turn', { sessionId: `web:s${n % 500}` }); },
    settle: async () => undefined,
    close: async () => { await queue.close(); connection.disconnect(); },
  };
}

/** The gateway's ingest, wired as `startParts` wires it (src/gateway/index.ts). */
function buildIngest(base: RedisClient, prefix: string, baseURL: string): Subject {
  const logger = createSilentLogger();
  const keyPrefix = `${prefix}:`;
  const queuePrefix = `{${prefix}q}`;
  const failFastRedis = duplicateRedis(base, { maxRetriesPerRequest: 2 });
  const ingestRedis = duplicateRedis(base, { maxRetriesPerRequest: 2, commandTimeout: 750 });
  const store = createSessionStore({ redis: failFastRedis, logger }, { keyPrefix });
  const producer = createTurnProducer({ redis: failFastRedis }, { queuePrefix, keyPrefix });
  const outbound = openOutboundQueue(failFastRedis, { queuePrefix, queueShards: 1, outboundQueue: 'outbound' });
  const opsOptions = { baseURL, apiKey: 'bench', threshold: 0.5, hygieneThreshold: 0.85, keyPrefix, leaseTtlMs: 15_000, limits: LIMITS, llmTimeoutMs: 20_000, llmMaxRetries: 0 };
  const ops = createLlmSessionOps({ redis: failFastRedis, logger, store }, opsOptions);
  const view = createRedisSessionView({ redis: failFastRedis }, { keyPrefix, contextWindow: 128_000, reservedOutputTokens: 4096, model: LIMITS.model, summaryModel: LIMITS.summaryModel, threshold: 0.5, hygieneThreshold: 0.85 });
  const ingest: Ingest = createIngest({ redis: ingestRedis, producer, ops, hygiene: ops, outbound, logger, commands: { view, turnPosition: async () => ({ state: 'none' }) } }, {
    keyPrefix, allow: { telegram: '*', discord: '*', web: '*', api: '*' }, rateLimitPerMinute: 10_000, maxMessageChars: 8000, groupMode: 'per-chat',
  });
  return {
    async send(n) {
      const outcome = await ingest.handle(webMessage(n));
      if (outcome !== 'accepted') throw new Error(`ingest bench: message ${n} was ${outcome}, not accepted`);
    },
    settle: () => ingest.idle(),
    async close() {
      await producer.close();
      failFastRedis.disconnect();
      ingestRedis.disconnect();
    },
  };
}

function webMessage(n: number): InboundMessage {
  const chat = `s${n % 500}`;
  return {
    id: `web:${chat}:m${n}`, channel: 'web', chatId: chat, userId: chat, userName: 'bench', text: `message ${n}`,
    attachments: [], platformMessageId: `m${n}`, chatType: 'private', receivedAt: Date.now(), refusalsAnswered: true, clientAddress: '127.0.0.1',
  };
}

/** Deletes every key of one figure (SCAN, never FLUSHDB: `REDIS_URL` may be a shared server). */
export async function removeKeys(redis: BenchRedis, prefix: string): Promise<void> {
  for (const pattern of [`${prefix}:*`, `{${prefix}q}*`]) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.admin.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.admin.unlink(...keys);
    } while (cursor !== '0');
  }
}
