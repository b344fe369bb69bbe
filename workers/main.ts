import { Queue, Worker } from 'bullmq';
import { ContextCompressor } from '../src/core/compressor.js';
import type { OutboundMessage } from '../src/core/inbound.js';
import type { Logger } from '../src/log.js';
import { DEFAULT_SYSTEM_PROMPT } from '../src/session/session-ops.js';
import { createSilentLogger } from '../src/log.js';
import { createLlmClient, type LlmClientOptions } from '../src/llm/client.js';
import { createSummarizer } from '../src/llm/summarizer.js';
import { resolveQueueNames, type QueueNames, type TurnJobData } from '../src/queue/names.js';
import { createRedis, type RedisClient } from '../src/redis/client.js';
import { DEFAULT_KEY_PREFIX } from '../src/redis/keys.js';
import { DEFAULT_LEASE_TTL_MS } from '../src/redis/lease.js';
import { createSessionStore } from '../src/redis/session-store.js';
import type { PriceTable } from '../src/redis/usage.js';
import type { AgentOptions } from './agent.processor.js';
import { ToolRegistry } from './tools/registry.js';
import { BUILTIN_TOOLS } from './tools/builtins.js';
import { onTurnFailed, processTurnJob, type TurnRunner } from './turn-job.js';
import type { ToolDefinition } from './tools/types.js';

export { DEFAULT_SYSTEM_PROMPT };

/** Options of {@link runWorker}. */
export interface RunWorkerOptions extends Partial<QueueNames> {
  /** A connection (with `maxRetriesPerRequest: null`) or a `redis://` URL. Default `redis://127.0.0.1:6379`. */
  redis?: RedisClient | string;
  /** Session key prefix. Default `cg:`. */
  keyPrefix?: string;
  /** The endpoint and models; `summaryModel` falls back to `model` on failure. */
  llm: LlmClientOptions & { summaryModel?: string };
  /** The model's context window in tokens. */
  contextWindow: number;
  /** Tokens kept free for the answer. Default 0. */
  reservedOutputTokens?: number;
  /** In-loop compaction trigger as a share of (window − reserve). Default 0.5. */
  threshold?: number;
  /** Turns run in parallel by this process (different sessions). Default 4. */
  concurrency?: number;
  /** Extra tools, added to the built-ins (same name replaces). */
  tools?: ToolDefinition[];
  logger?: Logger;
  systemPrompt?: string;
  /** Model calls per turn. Default 12. */
  maxModelCalls?: number;
  /** Forced compactions after "context length exceeded" per turn. Default 3. */
  maxContextRetries?: number;
  /** Session lease TTL in ms, renewed every third. Default 15000. */
  leaseTtlMs?: number;
  /** Delay before a turn whose session is leased elsewhere is tried again, ms. Default 1000. */
  leaseRetryMs?: number;
  /** BullMQ job lock in ms (a dead worker's turn is retried after about this long). Default 30000. */
  lockDurationMs?: number;
  /** BullMQ stalled-job check interval in ms. Default `lockDurationMs`. */
  stalledIntervalMs?: number;
  /** Times a turn job may stall (its worker died) before it fails for good and is dead-lettered. Default 5. */
  maxStalledCount?: number;
  /** Approximate transcript entries kept per session. Default 100000. */
  transcriptRetention?: number;
  /** Price overrides by model (USD per 1M tokens). */
  prices?: PriceTable;
}

/** A running worker. */
export interface RunningWorker {
  /** Stops taking turns, waits for the running ones to commit, closes connections it opened. */
  close(): Promise<void>;
}

/** Starts an agent worker: takes turn jobs, runs the tool loop, enqueues replies. */
export async function runWorker(options: RunWorkerOptions): Promise<RunningWorker> {
  const names = resolveQueueNames(options);
  const ownsRedis = typeof options.redis !== 'object';
  const redis = typeof options.redis === 'object' ? options.redis : createRedis(options.redis);
  const logger = (options.logger ?? createSilentLogger()).child({ component: 'worker' });
  const keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  const store = createSessionStore({ redis, logger }, { keyPrefix, transcriptRetention: options.transcriptRetention });
  const llm = createLlmClient(options.llm, { logger });
  const summarizer = createSummarizer({ llm, logger }, { summaryModel: options.llm.summaryModel });
  const compressor = new ContextCompressor({
    contextWindow: options.contextWindow, summarizer, threshold: options.threshold,
    reservedOutputTokens: options.reservedOutputTokens, model: options.llm.model,
  });
  const tools = new ToolRegistry(BUILTIN_TOOLS);
  for (const tool of options.tools ?? []) tools.register(tool);
  const outbound = new Queue<OutboundMessage>(names.outboundQueue, { connection: redis, prefix: names.queuePrefix });
  const agentOptions: AgentOptions = {
    systemPrompt: options.systemPrompt ?? DEFAULT_SYSTEM_PROMPT, contextWindow: options.contextWindow,
    maxModelCalls: options.maxModelCalls ?? 12, maxContextRetries: options.maxContextRetries ?? 3,
    summaryModel: options.llm.summaryModel, prices: options.prices, reservedOutputTokens: options.reservedOutputTokens,
  };
  const turn: TurnRunner = { redis, store, outbound, logger, keyPrefix, agentOptions, leaseTtlMs: options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
    leaseRetryMs: options.leaseRetryMs ?? 1000, deps: { redis, store, llm, compressor, tools, logger }, deadLettered: new Set(), closing: false };
  const lockDuration = options.lockDurationMs ?? 30_000;
  const worker = new Worker<TurnJobData>(names.turnQueue, (job, token) => processTurnJob(turn, job, token), {
    connection: redis, prefix: names.queuePrefix, concurrency: options.concurrency ?? 4,
    lockDuration, stalledInterval: options.stalledIntervalMs ?? lockDuration, maxStalledCount: options.maxStalledCount ?? 5,
  });
  const failures = handleFailures(worker, turn);
  worker.on('error', (err) => logger.error({ err }, 'worker error'));
  await worker.waitUntilReady();
  logger.info({ queue: names.turnQueue, concurrency: options.concurrency ?? 4 }, 'worker started');
  return {
    async close() {
      logger.info({}, 'worker draining');
      turn.closing = true;
      await worker.close();
      await failures.settled();
      await outbound.close();
      if (ownsRedis) await redis.quit();
      logger.info({}, 'worker stopped');
    },
  };
}

/** Runs {@link onTurnFailed} for every failed attempt; `settled()` waits for those still running. */
function handleFailures(worker: Worker<TurnJobData>, turn: TurnRunner): { settled(): Promise<void> } {
  const running = new Set<Promise<void>>();
  worker.on('failed', (job, err) => {
    if (!job) return;
    const handled = onTurnFailed(turn, job, err).catch((error: unknown) => turn.logger.error({ err: error, jobId: job.id }, 'failed turn not handled'));
    running.add(handled);
    void handled.finally(() => running.delete(handled));
  });
  return { settled: async () => { await Promise.all(running); } };
}
