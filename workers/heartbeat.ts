import type { BudgetSettings } from '../src/core/budget.js';
import type { Logger } from '../src/log.js';
import { NOOP_METRICS, type MetricEvent, type Metrics } from '../src/metrics.js';
import { redactRedisUrl, type RedisClient } from '../src/redis/client.js';
import { budgetSettingsDigest, newProcessId, startHeartbeat, type Heartbeat, type HeartbeatRecord, type LlmBeat, type McpServerBeat, type WorkerBeat } from '../src/redis/heartbeats.js';

/** Options of {@link createWorkerHeartbeat}. */
export interface WorkerHeartbeatOptions {
  keyPrefix: string;
  /** How long a beat lives, ms (renewed every third). */
  ttlMs: number;
  queue: string;
  concurrency: number;
  /** The LLM it runs with (no secret: the base URL's credentials are masked here). */
  llm: LlmBeat;
  /** chatgate version. Default `unknown`. */
  version?: string;
  /** The budget settings it enforces: their digest goes in each beat. Absent: none. */
  budgets?: BudgetSettings;
  /** The state of its MCP servers, read at each beat. Default: none shown. */
  mcp?: () => McpServerBeat[];
}

/** A worker's heartbeat: what it counts, and the beat itself. */
export interface WorkerHeartbeat {
  /** This process's heartbeat id (`host:pid:random`). */
  readonly id: string;
  /** `metrics` with the turns and model calls also counted into the heartbeat. */
  observe(metrics: Metrics | undefined): Metrics;
  /** Writes the first beat and keeps beating. */
  start(): Promise<void>;
  /** Stops beating and removes the entry. */
  stop(): Promise<void>;
}

/**
 * The heartbeat of a worker process: host, pid, start time, version, turns done and failed, and
 * its last model call (when, and how it ended), the digest of its budget settings — what
 * `chatgate status`, `chatgate budgets list` and `/readyz` read.
 */
export function createWorkerHeartbeat(deps: { redis: RedisClient; logger: Logger }, options: WorkerHeartbeatOptions): WorkerHeartbeat {
  const id = newProcessId();
  const startedAt = Date.now();
  const figures: WorkerBeat = { queue: options.queue, concurrency: options.concurrency, llm: { ...options.llm, ...(options.llm.baseUrl ? { baseUrl: redactRedisUrl(options.llm.baseUrl) } : {}) }, turnsDone: 0, turnsFailed: 0 };
  const count = (event: MetricEvent) => {
    if (event.type === 'model_call') figures.lastModelCall = { at: Date.now(), outcome: event.outcome };
    if (event.type === 'turn' && event.outcome === 'ok') figures.turnsDone += 1;
    if (event.type === 'turn' && event.outcome === 'error') figures.turnsFailed += 1;
  };
  const budgetDigest = budgetSettingsDigest(options.budgets);
  const current = (): HeartbeatRecord => ({
    role: 'worker', id, host: id.split(':')[0]!, pid: process.pid, startedAt, version: options.version ?? 'unknown',
    beatAt: Date.now(), ttlMs: options.ttlMs, budgetDigest, worker: { ...figures, ...(options.mcp ? { mcp: options.mcp() } : {}) },
  });
  let running: Heartbeat | undefined;
  let lastPromptBeat = 0;
  // A finished turn is shown at once (at most one extra beat a second), not only at the next tick.
  const beatSoon = () => {
    if (!running || Date.now() - lastPromptBeat < 1000) return;
    lastPromptBeat = Date.now();
    void running.beat();
  };
  return {
    id,
    observe(metrics) {
      const inner = metrics ?? NOOP_METRICS;
      return {
        record(event) {
          count(event);
          inner.record(event);
          if (event.type === 'turn') beatSoon();
        },
      };
    },
    async start() {
      running = await startHeartbeat(deps, { keyPrefix: options.keyPrefix, current });
    },
    async stop() {
      await running?.stop();
    },
  };
}

