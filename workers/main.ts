import { recordCommittedUsage } from '../src/usage/usage-metrics.js';
import { Worker } from 'bullmq';
import { ContextCompressor } from '../src/core/compaction/compressor.js';
import { DEFAULT_SYSTEM_PROMPT } from '../src/session/session-ops.js';
import { createSilentLogger, type Logger } from '../src/log.js';
import { createLlmClient } from '../src/llm/client.js';
import { createSummarizer } from '../src/llm/summarizer.js';
import { createBudgetGuard } from '../src/budget/guard.js';
import { formatAmount, limitsBelowOneCall, type BudgetSettings } from '../src/core/budget.js';
import { pricingOf, type PriceTable } from '../src/core/models.js';
import { createTokenCounter } from '../src/llm/encodings.js';
import { stripUndefined } from '../src/core/option-checks.js';
import { resolveQueueNames, type TurnJobData } from '../src/queue/names.js';
import { createRedis, duplicateRedis, watchConnection, type RedisClient } from '../src/redis/client.js';
import { createTurnLiveReplies, type TurnLiveReplies } from './live-reply-publisher.js';
import { holdQueueLayout } from '../src/queue/shard-layout-guard.js';
import { openOutboundQueue } from '../src/outbound/outbound-queue.js';
import { consumedShards } from './shard-workers.js';
import { openShardedQueue } from '../src/queue/sharded.js';
import { startDeadWorkerRecovery } from './dead-workers.js';
import { createSessionStore } from '../src/redis/session-store.js';
import type { AgentOptions } from './agent.processor.js';
import { ToolRegistry } from './tools/registry.js';
import { createApprovalStore } from '../src/approvals/store.js';
import { BUILTIN_TOOLS } from './tools/builtins.js';
import type { McpServers } from './tools/mcp/manager.js';
import { onTurnFailed, processTurnJob, type TurnRunner } from './turn-job.js';
import { createIdleCompactions } from './idle-compaction.js';
import { startTurnStops } from './turn-stop.js';
import { ConfigError } from '../src/errors.js';
import { createWorkerAttachments } from './attachment-parts.js';
import { createWorkerHeartbeat } from './heartbeat.js';
import { DEFAULT_HEARTBEAT_TTL_MS } from '../src/redis/heartbeats.js';
import { WORKER_DEFAULTS, workerOptionIssues, type ResolvedRunWorkerOptions, type RunWorkerOptions, type WorkerDeps } from './worker-options.js';

export { DEFAULT_SYSTEM_PROMPT, WORKER_DEFAULTS };
export type { ResolvedRunWorkerOptions, RunWorkerOptions, WorkerDeps };

/** A running worker. */
export interface RunningWorker {
  /** Stops taking turns, waits for the running ones to commit, closes connections it opened. */
  close(): Promise<void>;
}

/**
 * Starts an agent worker: takes turn jobs, runs the tool loop, enqueues replies. Options are
 * resolved against {@link WORKER_DEFAULTS}, then validated.
 * @throws ConfigError naming every option that breaks its rule (before anything is started).
 */
export async function runWorker(deps: WorkerDeps, options: RunWorkerOptions): Promise<RunningWorker> {
  const o: ResolvedRunWorkerOptions = { ...WORKER_DEFAULTS, ...stripUndefined(options), llm: options.llm, contextWindow: options.contextWindow };
  const issues = workerOptionIssues(o);
  if (issues.length > 0) throw new ConfigError(issues);
  const names = resolveQueueNames(o);
  const ownsRedis = typeof deps.redis !== 'object';
  const redis = typeof deps.redis === 'object' ? deps.redis : createRedis(deps.redis);
  const logger = (deps.logger ?? createSilentLogger()).child({ component: 'worker' });
  const store = createSessionStore({ redis, logger, onCommitted: recordCommittedUsage(deps.metrics) }, { keyPrefix: o.keyPrefix, transcriptRetention: o.transcriptRetention, usageRetention: o.usageRetention });
  const { llm, compressor, tools, budget } = createAgentParts(deps, o, logger, redis);
  const consumers: Array<Worker<TurnJobData>> = [];
  // Another shard count recorded while this worker runs: it stops taking turns (the error line says what to do).
  // pause() without doNotWaitActive also cancels a fetch already blocked on Redis, which would take one more turn.
  const pauseConsumers = () => { for (const consumer of consumers) void consumer.pause().catch(() => undefined); };
  const layout = await holdQueueLayout({ redis, logger }, names, { ttlMs: o.heartbeatTtlMs ?? DEFAULT_HEARTBEAT_TTL_MS, onMoved: pauseConsumers });
  const shards = consumedShards(names, o.workerShards, o.concurrency);
  const outbound = openOutboundQueue(redis, names);
  // The MCP SDK (~250 ms of CPU to load) loads only when a server is configured.
  const mcp: McpServers = (o.mcpServers ?? []).length > 0
    ? (await import('./tools/mcp/manager.js')).startMcpServers({ tools, logger, metrics: deps.metrics }, { servers: o.mcpServers ?? [], version: o.version })
    : { ready: async () => undefined, status: () => [], close: async () => undefined };
  const heartbeat = createWorkerHeartbeat({ redis, logger }, {
    keyPrefix: o.keyPrefix, ttlMs: o.heartbeatTtlMs ?? DEFAULT_HEARTBEAT_TTL_MS, queue: names.turnQueue, concurrency: o.concurrency, version: o.version, budgets: o.budgets,
    llm: { model: o.llm.model, summaryModel: o.llm.summaryModel ?? o.llm.model, contextWindow: o.contextWindow, baseUrl: o.llm.baseURL, demo: o.demo ?? false },
    ...((o.mcpServers ?? []).length > 0 ? { mcp: () => mcp.status() } : {}),
  });
  const agentOptions: AgentOptions = {
    systemPrompt: o.systemPrompt ?? DEFAULT_SYSTEM_PROMPT, contextWindow: o.contextWindow, maxModelCalls: o.maxModelCalls,
    maxContextRetries: o.maxContextRetries, summaryModel: o.llm.summaryModel, prices: o.prices, reservedOutputTokens: o.reservedOutputTokens,
    compactionNotice: o.compactionNotice, approvalTimeoutMs: o.approvalTimeoutMs, attachmentTtlSeconds: o.attachments?.ttlSeconds,
  };
  const stopSubscriber = duplicateRedis(redis);
  stopSubscriber.on('error', (err: Error) => logger.debug({ err }, 'turn stop connection error'));
  const stops = await startTurnStops({ redis, subscriber: stopSubscriber, logger }, { keyPrefix: o.keyPrefix });
  const turn: TurnRunner = {
    redis, store, outbound, logger, keyPrefix: o.keyPrefix, agentOptions, leaseTtlMs: o.leaseTtlMs, leaseRetryMs: o.leaseRetryMs,
    deps: { redis, store, llm, compressor, tools, logger, metrics: heartbeat.observe(deps.metrics), attachments: createWorkerAttachments({ redis, logger, budget }, o), liveReplies: turnLiveReplies(redis, logger, o),
      approvals: createApprovalStore(redis, { keyPrefix: o.keyPrefix, transcriptRetention: o.transcriptRetention }) }, deadLettered: new Set(), closing: false, stops,
    workerId: heartbeat.id,
  };
  const turnQueue = openShardedQueue<TurnJobData>(names.turnQueue, names, redis);
  // A lost connection is reported by the workers' own outage log; the recovery's next look tries again.
  turnQueue.onError(() => undefined);
  turn.idle = createIdleCompactions({ redis, store, compressor, queue: turnQueue, logger, metrics: turn.deps.metrics }, {
    idleSeconds: o.idleCompactSeconds, threshold: o.threshold, contextWindow: o.contextWindow, reservedOutputTokens: o.reservedOutputTokens,
    systemPrompt: agentOptions.systemPrompt, model: o.llm.model, summaryModel: o.llm.summaryModel ?? o.llm.model, leaseTtlMs: o.leaseTtlMs, prices: o.prices, compactionNotice: o.compactionNotice,
  });
  // One BullMQ worker per consumed shard; the process's concurrency is split over them.
  const workers = shards.map(({ prefix, concurrency }) => new Worker<TurnJobData>(names.turnQueue, (job, token) => processTurnJob(turn, job, token), {
    connection: redis, prefix, concurrency,
    lockDuration: o.lockDurationMs, stalledInterval: o.stalledIntervalMs ?? o.lockDurationMs, maxStalledCount: o.maxStalledCount,
  }));
  consumers.push(...workers);
  if (layout.moved !== null) pauseConsumers();
  const failures = workers.map((worker) => handleFailures(worker, turn));
  for (const worker of workers) watchConnection(worker, logger, 'worker error');
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  await mcp.ready();
  await heartbeat.start();
  const recovery = startDeadWorkerRecovery({ redis, logger, queue: turnQueue }, { keyPrefix: o.keyPrefix, selfId: heartbeat.id, intervalMs: o.deadWorkerCheckMs });
  logger.info({ queue: names.turnQueue, concurrency: o.concurrency, shards: shards.map((s) => s.shard) }, 'worker started');
  return {
    async close() {
      logger.info({}, 'worker draining');
      turn.closing = true;
      recovery.stop();
      await Promise.all(workers.map((worker) => worker.close()));
      await turnQueue.close();
      await Promise.all(failures.map((f) => f.settled()));
      // Budget alerts still retried get a short wait; those left are named in a warn line.
      if (budget) await budget.alerts.close();
      await heartbeat.stop();
      await mcp.close();
      await layout.release();
      await stops.close();
      if (ownsRedis) await redis.quit();
      logger.info({}, 'worker stopped');
    },
  };
}

/** The LLM client, the compressor (summarising through the same client) and the tool registry of a worker. */
function createAgentParts(deps: WorkerDeps, o: ResolvedRunWorkerOptions, logger: Logger, redis: RedisClient) {
  const client = createLlmClient({ stream: o.liveReplies, ...o.llm }, { logger });
  const tokenCounter = deps.tokenCounter ?? createTokenCounter([o.llm.model, o.llm.summaryModel]);
  // Every model call of this worker (the agent's, the summariser's, a transcription) goes through the budget wrapper.
  const budget = o.budgets && createBudgetGuard({ redis, logger, metrics: deps.metrics }, { keyPrefix: o.keyPrefix, settings: o.budgets, prices: o.prices, defaultMaxTokens: o.reservedOutputTokens || 4096, tokenCounter });
  if (budget && o.budgets) warnBudgetSetup(logger, o.budgets, [o.llm.model, o.llm.summaryModel ?? o.llm.model], o.prices, o.reservedOutputTokens || 4096);
  const llm = budget ? budget.llm(client) : client;
  const summarizer = createSummarizer({ llm, logger }, { summaryModel: o.llm.summaryModel });
  const compressor = new ContextCompressor({
    contextWindow: o.contextWindow, summarizer, threshold: o.threshold, reservedOutputTokens: o.reservedOutputTokens, model: o.llm.model, tokenCounter,
  });
  const tools = new ToolRegistry(BUILTIN_TOOLS, undefined, o.toolApproval ?? []);
  for (const tool of deps.tools ?? []) tools.register(tool);
  return { llm, compressor, tools, budget };
}

/** A USD limit cannot hold for a model without a price: said once at start (its calls count in tokens only). */
function warnBudgetSetup(logger: Logger, budgets: BudgetSettings, models: string[], prices: PriceTable | undefined, maxOutputTokens: number): void {
  const usd = [budgets.user, budgets.chat, budgets.deployment].some((l) => l.day?.usd !== undefined || l.month?.usd !== undefined) || budgets.turn.usd !== undefined;
  const unpriced = [...new Set(models)].filter((model) => !pricingOf(model, prices));
  if (usd && unpriced.length > 0) logger.warn({ models: unpriced }, 'USD budget set but the model has no price: its calls count in tokens only (add it to CHATGATE_PRICES)');
  // A call goes only if its worst case fits: a limit below one answer's worst case serves nothing.
  for (const model of new Set(models)) {
    for (const small of limitsBelowOneCall(budgets, pricingOf(model, prices), maxOutputTokens)) {
      const amount = (value: number) => formatAmount(small.unit, value);
      logger.warn({ model, limit: small.what, unit: small.unit }, `the ${small.what} budget of ${amount(small.limit)} is below one answer's worst case with ${model} (${amount(small.need)} for ${maxOutputTokens} output tokens): every call under it is refused. Raise it, or lower CHATGATE_RESERVED_OUTPUT_TOKENS`);
    }
  }
}

/** The live replies of this worker's turns, unless they are off. */
function turnLiveReplies(redis: RedisClient, logger: Logger, o: ResolvedRunWorkerOptions): TurnLiveReplies | undefined {
  return o.liveReplies ? createTurnLiveReplies({ redis, logger }, { keyPrefix: o.keyPrefix, intervalMs: o.liveReplyPublishIntervalMs }) : undefined;
}

/** Runs {@link onTurnFailed} for every failed attempt; `settled()` waits for those still running. */
function handleFailures(worker: Worker<TurnJobData>, turn: TurnRunner): { settled(): Promise<void> } {
  const running = new Set<Promise<void>>();
  // BullMQ's stalled check found a turn whose worker stopped renewing its lock (the dead-worker recovery logs its own).
  worker.on('stalled', (jobId, previous) => turn.logger.warn({ jobId, previous }, 'turn stalled: its worker stopped renewing the lock; put back for another worker'));
  worker.on('failed', (job, err) => {
    if (!job) return;
    const handled = onTurnFailed(turn, job, err).catch((error: unknown) => turn.logger.error({ err: error, jobId: job.id }, 'failed turn not handled'));
    running.add(handled);
    void handled.finally(() => running.delete(handled));
  });
  return { settled: async () => { await Promise.all(running); } };
}
