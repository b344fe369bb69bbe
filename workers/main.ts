import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import { ContextCompressor } from '../src/core/compressor.js';
import type { InboundMessage, OutboundMessage } from '../src/core/inbound.js';
import type { Logger } from '../src/log.js';
import { DEFAULT_SYSTEM_PROMPT } from '../src/session/session-ops.js';
import { turnDurationSeconds } from '../src/monitor/metrics.js';
import { createSilentLogger } from '../src/log.js';
import { createLlmClient, type LlmClientOptions } from '../src/llm/client.js';
import { createSummarizer } from '../src/llm/summarizer.js';
import { resolveQueueNames, type QueueNames, type TurnJobData } from '../src/queue/names.js';
import { publishTurnSignal, type TurnSignal } from '../src/queue/signals.js';
import { createRedis, type RedisClient } from '../src/redis/client.js';
import { claimInbox } from '../src/redis/inbox.js';
import { DEFAULT_KEY_PREFIX } from '../src/redis/keys.js';
import { DEFAULT_LEASE_TTL_MS, holdLease } from '../src/redis/lease.js';
import { createSessionStore, type SessionStore } from '../src/redis/session-store.js';
import type { PriceTable } from '../src/redis/usage.js';
import { runAgentTurn, type AgentDeps, type AgentOptions } from './agent.processor.js';
import { ToolRegistry } from './tools/registry.js';
import { BUILTIN_TOOLS } from './tools/builtins.js';
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
  /** BullMQ stalled-job check interval in ms. Default 30000. */
  stalledIntervalMs?: number;
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
    summaryModel: options.llm.summaryModel, prices: options.prices,
  };
  const turn: TurnRunner = { redis, store, outbound, logger, keyPrefix, agentOptions, leaseTtlMs: options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
    leaseRetryMs: options.leaseRetryMs ?? 1000, deps: { redis, store, llm, compressor, tools, logger } };
  const worker = new Worker<TurnJobData>(names.turnQueue, (job, token) => processTurnJob(turn, job, token), {
    connection: redis, prefix: names.queuePrefix, concurrency: options.concurrency ?? 4,
    lockDuration: options.lockDurationMs ?? 30_000, stalledInterval: options.stalledIntervalMs ?? 30_000, maxStalledCount: 5,
  });
  worker.on('failed', (job, err) => logger.warn({ err, jobId: job?.id, sessionId: job?.data.sessionId }, 'turn job failed'));
  worker.on('error', (err) => logger.error({ err }, 'worker error'));
  await worker.waitUntilReady();
  logger.info({ queue: names.turnQueue, concurrency: options.concurrency ?? 4 }, 'worker started');
  return {
    async close() {
      await worker.close();
      await outbound.close();
      if (ownsRedis) await redis.quit();
      logger.info({}, 'worker stopped');
    },
  };
}

interface TurnRunner {
  redis: RedisClient;
  store: SessionStore;
  outbound: Queue<OutboundMessage>;
  logger: Logger;
  keyPrefix: string;
  agentOptions: AgentOptions;
  leaseTtlMs: number;
  leaseRetryMs: number;
  deps: AgentDeps;
}

/** One turn job: lease, outbox left from a crash, inbox → processing, tool loop, replies out. */
async function processTurnJob(runner: TurnRunner, job: Job<TurnJobData>, token?: string): Promise<string> {
  const { sessionId } = job.data;
  const keys = runner.store.keys(sessionId);
  const lease = await holdLease(runner.redis, keys, runner.leaseTtlMs);
  if (!lease) {
    await job.moveToDelayed(Date.now() + runner.leaseRetryMs, token);
    throw new DelayedError();
  }
  const log = runner.logger.child({ sessionId, jobId: job.id });
  let signal: ((type: TurnSignal['type']) => void) | null = null;
  try {
    await flushOutbox(runner, sessionId);
    const items = await claimInbox(runner.redis, keys);
    if (items.length === 0) return 'empty';
    signal = (type) => void publishTurnSignal(runner.redis, toSignal(type, sessionId, items), runner.keyPrefix).catch(() => undefined);
    signal('turn-started');
    const snapshot = await runner.store.load(sessionId);
    const typing = signal;
    const stopTimer = turnDurationSeconds.startTimer({ channel: items[0].channel });
    try {
      await runAgentTurn({ ...runner.deps, logger: log, onModelCall: () => typing('typing') }, runner.agentOptions, { snapshot, fence: lease.fence, items });
      stopTimer({ outcome: 'ok' });
    } catch (err) {
      stopTimer({ outcome: 'error' });
      throw err;
    }
    await flushOutbox(runner, sessionId);
    return `answered ${items.length}`;
  } finally {
    // Sent on failure too, so the gateway never keeps "typing" for a turn that died.
    signal?.('turn-ended');
    await lease.release();
  }
}

/** Enqueues committed replies (stable job ids: re-adding one that exists is a no-op), then drops them. */
async function flushOutbox(runner: TurnRunner, sessionId: string): Promise<void> {
  const pending = await runner.store.readOutbox(sessionId);
  for (const message of pending) {
    await runner.outbound.add(message.kind, message, {
      jobId: message.id, attempts: 8, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: { age: 86_400 }, removeOnFail: { age: 7 * 86_400 },
    });
  }
  await runner.store.clearOutbox(sessionId, pending.length);
}

function toSignal(type: TurnSignal['type'], sessionId: string, items: InboundMessage[]): TurnSignal {
  const last = items[items.length - 1];
  return { type, sessionId, channel: last.channel, chatId: last.chatId, ...(last.threadId ? { threadId: last.threadId } : {}), atMs: Date.now() };
}
