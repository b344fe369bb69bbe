import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import { ContextCompressor } from '../src/core/compressor.js';
import type { InboundMessage, OutboundMessage } from '../src/core/inbound.js';
import type { Logger } from '../src/log.js';
import { DEFAULT_SYSTEM_PROMPT } from '../src/session/session-ops.js';
import { turnDurationSeconds } from '../src/monitor/metrics.js';
import { StaleCommitError } from '../src/errors.js';
import { createSilentLogger } from '../src/log.js';
import { createLlmClient, type LlmClientOptions } from '../src/llm/client.js';
import { createSummarizer } from '../src/llm/summarizer.js';
import { resolveQueueNames, type QueueNames, type TurnJobData } from '../src/queue/names.js';
import { publishTurnSignal, type TurnSignal } from '../src/queue/signals.js';
import { createRedis, type RedisClient } from '../src/redis/client.js';
import { claimInbox } from '../src/redis/inbox.js';
import { DEFAULT_KEY_PREFIX } from '../src/redis/keys.js';
import { DEFAULT_LEASE_TTL_MS, holdLease, type HeldLease } from '../src/redis/lease.js';
import { createSessionStore, type SessionStore } from '../src/redis/session-store.js';
import type { PriceTable } from '../src/redis/usage.js';
import { runAgentTurn, type AgentDeps, type AgentOptions } from './agent.processor.js';
import { ToolRegistry } from './tools/registry.js';
import { BUILTIN_TOOLS } from './tools/builtins.js';
import { deadLetterTurn } from './dead-letter.js';
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
    leaseRetryMs: options.leaseRetryMs ?? 1000, deps: { redis, store, llm, compressor, tools, logger }, deadLettered: new Set() };
  const lockDuration = options.lockDurationMs ?? 30_000;
  const worker = new Worker<TurnJobData>(names.turnQueue, (job, token) => processTurnJob(turn, job, token), {
    connection: redis, prefix: names.queuePrefix, concurrency: options.concurrency ?? 4,
    lockDuration, stalledInterval: options.stalledIntervalMs ?? lockDuration, maxStalledCount: options.maxStalledCount ?? 5,
  });
  const failures = new Set<Promise<void>>();
  worker.on('failed', (job, err) => {
    if (!job) return;
    const handled = onTurnFailed(turn, job, err).catch((error: unknown) => logger.error({ err: error, jobId: job.id }, 'failed turn not handled'));
    failures.add(handled);
    void handled.finally(() => failures.delete(handled));
  });
  worker.on('error', (err) => logger.error({ err }, 'worker error'));
  await worker.waitUntilReady();
  logger.info({ queue: names.turnQueue, concurrency: options.concurrency ?? 4 }, 'worker started');
  return {
    async close() {
      logger.info({}, 'worker draining');
      await worker.close();
      await Promise.all(failures);
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
  /** Jobs whose final failure the processor already dead-lettered (the 'failed' handler skips them). */
  deadLettered: Set<string>;
}

interface RunningTurn {
  job: Job<TurnJobData>;
  log: Logger;
  lease: HeldLease;
  items: InboundMessage[];
  typing: () => void;
}

/** One turn job: lease, outbox left from a crash, inbox → processing, tool loop, replies out. */
async function processTurnJob(runner: TurnRunner, job: Job<TurnJobData>, token?: string): Promise<string> {
  const { sessionId } = job.data;
  const keys = runner.store.keys(sessionId);
  const lease = await holdLease(runner.redis, keys, runner.leaseTtlMs);
  if (!lease) return retryLater(runner, job, token);
  let signal: ((type: TurnSignal['type']) => void) | null = null;
  try {
    await flushOutbox(runner, sessionId);
    const items = await claimInbox(runner.redis, keys);
    if (items.length === 0) return 'empty';
    signal = (type) => void publishTurnSignal(runner.redis, toSignal(type, sessionId, items), runner.keyPrefix).catch(() => undefined);
    signal('turn-started');
    const typing = signal;
    const outcome = await runTurn(runner, { job, log: turnLogger(runner.logger, job), lease, items, typing: () => typing('typing') });
    // Not a failure: the new lease holder takes the messages; this job looks again later, attempts untouched.
    if (outcome === 'lease-lost') return await retryLater(runner, job, token);
    await flushOutbox(runner, sessionId);
    return `answered ${items.length}`;
  } finally {
    // Sent on failure too, so the gateway never keeps "typing" for a turn that died.
    signal?.('turn-ended');
    await lease.release();
  }
}

/**
 * Runs the tool loop. A lost lease ends the turn quietly ('lease-lost'); any other failure is
 * rethrown for BullMQ to retry — on the job's last attempt after dead-lettering its messages.
 */
async function runTurn(runner: TurnRunner, turn: RunningTurn): Promise<'ok' | 'lease-lost'> {
  const { job, log, lease, items } = turn;
  const stopTimer = turnDurationSeconds.startTimer({ channel: items[0].channel });
  try {
    const snapshot = await runner.store.load(job.data.sessionId);
    await runAgentTurn({ ...runner.deps, logger: log, onModelCall: turn.typing }, runner.agentOptions, { snapshot, fence: lease.fence, lease, items });
    stopTimer({ outcome: 'ok' });
    return 'ok';
  } catch (err) {
    if (err instanceof StaleCommitError) {
      stopTimer({ outcome: 'lease-lost' });
      log.warn({ err, messages: items.length }, 'turn aborted: the session lease was lost');
      return 'lease-lost';
    }
    stopTimer({ outcome: 'error' });
    if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
      await deadLetterTurn({ redis: runner.redis, logger: log }, { sessionId: job.data.sessionId, keys: runner.store.keys(job.data.sessionId), fence: lease.fence, jobId: job.id, err });
      await flushOutbox(runner, job.data.sessionId);
      if (job.id) runner.deadLettered.add(job.id);
    }
    throw err;
  }
}

/**
 * The 'failed' handler: logs every failed attempt; on a final failure the processor did not
 * handle (a job stalled too often is failed without running it), dead-letters the session's
 * processing list under the lease — unless a running turn holds the session and takes it anyway.
 */
async function onTurnFailed(runner: TurnRunner, job: Job<TurnJobData>, err: Error): Promise<void> {
  const log = turnLogger(runner.logger, job);
  const final = err.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1);
  log.warn({ err, attemptsMade: job.attemptsMade, final }, 'turn job failed');
  if (!final || (job.id !== undefined && runner.deadLettered.delete(job.id))) return;
  const { sessionId } = job.data;
  const keys = runner.store.keys(sessionId);
  const lease = await holdLease(runner.redis, keys, runner.leaseTtlMs);
  if (!lease) {
    log.warn({}, 'dead letter skipped: a running turn holds the session and takes its messages');
    return;
  }
  try {
    await deadLetterTurn({ redis: runner.redis, logger: log }, { sessionId, keys, fence: lease.fence, jobId: job.id, err });
    await flushOutbox(runner, sessionId);
  } finally {
    await lease.release();
  }
}

/** Puts the job back for `leaseRetryMs` without spending an attempt. */
async function retryLater(runner: TurnRunner, job: Job<TurnJobData>, token?: string): Promise<never> {
  await job.moveToDelayed(Date.now() + runner.leaseRetryMs, token);
  throw new DelayedError();
}

/** The logger of one turn job: `sessionId`, `channel` and `jobId` bound (DESIGN §6). */
function turnLogger(logger: Logger, job: Job<TurnJobData>): Logger {
  const { sessionId } = job.data;
  // Session ids are `channel:chatId[:threadId]` (sessionKeyOf).
  const channel = sessionId.includes(':') ? sessionId.slice(0, sessionId.indexOf(':')) : 'unknown';
  return logger.child({ sessionId, channel, jobId: job.id });
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
