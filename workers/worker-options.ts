import type { UsageRetention } from '../src/redis/session-store.js';
import type { LlmClientOptions } from '../src/llm/client.js';
import type { Logger } from '../src/log.js';
import type { Metrics } from '../src/metrics.js';
import type { TokenCounter } from '../src/core/tokens.js';
import type { QueueNames } from '../src/queue/names.js';
import type { RedisClient } from '../src/redis/client.js';
import { DEFAULT_COMPRESS_THRESHOLD } from '../src/core/compaction/hygiene.js';
import { int, numberIssues, SHARED_OPTION_RULES, type NumberRule } from '../src/core/option-checks.js';
import { DEFAULT_KEY_PREFIX } from '../src/redis/keys.js';
import { DEFAULT_LEASE_TTL_MS } from '../src/redis/lease.js';
import type { PriceTable } from '../src/redis/usage.js';
import type { BudgetSettings } from '../src/core/budget.js';
import type { ToolDefinition } from './tools/types.js';
import { DEFAULT_LIVE_REPLY_PUBLISH_INTERVAL_MS } from './live-reply-publisher.js';
import type { ApprovalRule } from '../src/core/approval.js';
import type { McpServerConfig } from './tools/mcp/config.js';

/** The collaborators of `runWorker`. */
export interface WorkerDeps {
  /** A connection (with `maxRetriesPerRequest: null`) or a `redis://` URL. Default `redis://127.0.0.1:6379` (closed on `close()`). */
  redis?: RedisClient | string;
  /** Default: silent. */
  logger?: Logger;
  /** Where model calls, turns and compactions are counted. Default: nowhere (`NOOP_METRICS`). */
  metrics?: Metrics;
  /** Extra tools, added to the built-ins (same name replaces). */
  tools?: readonly ToolDefinition[];
  /** Counts tokens for the worker (share the process's). Default: one of its own, with the configured models' encodings loaded. */
  tokenCounter?: TokenCounter;
}

/** Options of `runWorker`. Durations in ms; token figures in tokens. */
export interface RunWorkerOptions extends Partial<QueueNames> {
  /** The endpoint and models; `summaryModel` falls back to `model` on failure. */
  llm: LlmClientOptions & { summaryModel?: string };
  /** The model's context window in tokens. */
  contextWindow: number;
  /** Session key prefix. Default `cg:`. */
  keyPrefix?: string;
  /** Queue shards this worker takes turns from (0-based, each < `queueShards`). Default: every shard. */
  workerShards?: readonly number[];
  /** Tokens kept free for the answer. Default 0. */
  reservedOutputTokens?: number;
  /** In-loop compaction trigger as a share of (window − reserve). Default 0.5. */
  threshold?: number;
  /** Turns run in parallel by this process (different sessions). Default 4. */
  concurrency?: number;
  /** Default: `DEFAULT_SYSTEM_PROMPT`. */
  systemPrompt?: string;
  /** Model calls per turn. Default 12. */
  maxModelCalls?: number;
  /** Forced compactions after "context length exceeded" per turn. Default 3. */
  maxContextRetries?: number;
  /** Tell the user in one line when the in-loop compressor compacted their conversation. Default true. */
  compactionNotice?: boolean;
  /**
   * A session quiet this long after its turn, whose next request is over `threshold`, is compacted
   * in the background (layer `idle`, workers/idle-compaction.ts), seconds; 0: off. Default 60.
   */
  idleCompactSeconds?: number;
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
  /** Approximate transcript entries kept per session (0: unlimited). Default: the store's. */
  transcriptRetention?: number;
  /** Days the usage rollups are kept (hourly, daily). Default: the store's (14, 400). */
  usageRetention?: UsageRetention;
  /** Price overrides by model (USD per 1M tokens). */
  prices?: PriceTable;
  /** Spend limits (src/core/budget.ts); unset or without any limit: model calls are not reserved. */
  budgets?: BudgetSettings;
  /**
   * Attachments: `vision` overrides the table of known vision models (CHATGATE_VISION);
   * `transcribeModel` turns voice and audio into text through the endpoint (unset: off);
   * `ttlSeconds` is how long the images tools return stay in Redis (default 86400, as the gateway's files).
   */
  attachments?: { vision?: boolean; transcribeModel?: string; ttlSeconds?: number };
  /** Life of the worker's heartbeat in Redis, ms, renewed every third (`chatgate status`, `/readyz`). Default 15 000. */
  heartbeatTtlMs?: number;
  /** chatgate version, shown in the heartbeat. Default `unknown`. */
  version?: string;
  /** It runs the built-in offline demo model: shown in the heartbeat, so operator commands use the demo too. Default false. */
  demo?: boolean;
  /** How often the worker looks for dead workers (heartbeat lapsed) whose turns it recovers, ms. Default 2000. */
  deadWorkerCheckMs?: number;
  /**
   * Stream answers: the model call streams and the reply's text so far is published through Redis
   * for the gateway to show (workers/live-reply-publisher.ts). Default true; false: plain calls, no partials.
   */
  liveReplies?: boolean;
  /** Least time between two partial updates of one reply, ms. Default 250. */
  liveReplyPublishIntervalMs?: number;
  /**
   * The operator's approval rules (`CHATGATE_TOOL_APPROVAL`), ahead of each tool's own `approval`:
   * the first whose pattern matches a tool's name decides `auto`, `ask` or `deny`. Default none.
   */
  toolApproval?: readonly ApprovalRule[];
  /** How long a call the user is asked about waits for a decision, ms (then it expires and does not run). Default 600 000. */
  approvalTimeoutMs?: number;
  /**
   * MCP servers whose tools the agent gets (workers/tools/mcp): the worker connects to each at
   * start (waiting for each first attempt, at most its `connectTimeoutMs`) and stops its stdio servers on `close()`. Default none.
   */
  mcpServers?: readonly McpServerConfig[];
}

/** The options `runWorker` fills in when they are not given. */
type WorkerDefaults = Required<Pick<RunWorkerOptions,
  'keyPrefix' | 'reservedOutputTokens' | 'threshold' | 'concurrency' | 'maxModelCalls' | 'maxContextRetries' |
  'leaseTtlMs' | 'leaseRetryMs' | 'lockDurationMs' | 'maxStalledCount' | 'liveReplies' | 'liveReplyPublishIntervalMs' | 'idleCompactSeconds'>>;

/** {@link RunWorkerOptions} after defaults. */
export type ResolvedRunWorkerOptions = RunWorkerOptions & WorkerDefaults;

/** The worker's defaults: the one place they are written (the configuration's defaults come from here). */
export const WORKER_DEFAULTS = Object.freeze({
  keyPrefix: DEFAULT_KEY_PREFIX,
  reservedOutputTokens: 0,
  threshold: DEFAULT_COMPRESS_THRESHOLD,
  // Turns wait on the model almost all the time: a process holds dozens at little CPU (docs/scaling.md).
  concurrency: 32,
  maxModelCalls: 12,
  maxContextRetries: 3,
  leaseTtlMs: DEFAULT_LEASE_TTL_MS,
  leaseRetryMs: 1000,
  idleCompactSeconds: 60,
  lockDurationMs: 30_000,
  maxStalledCount: 5,
  liveReplies: true,
  liveReplyPublishIntervalMs: DEFAULT_LIVE_REPLY_PUBLISH_INTERVAL_MS,
} satisfies WorkerDefaults);

const WORKER_RULES: Readonly<Record<string, NumberRule>> = {
  ...SHARED_OPTION_RULES,
  concurrency: int(1),
  maxModelCalls: int(1),
  maxContextRetries: int(0),
  leaseTtlMs: int(1),
  leaseRetryMs: int(0),
  lockDurationMs: int(1),
  stalledIntervalMs: int(1),
  maxStalledCount: int(0),
  deadWorkerCheckMs: int(50),
  liveReplyPublishIntervalMs: int(0),
  approvalTimeoutMs: int(1000),
  idleCompactSeconds: int(0),
};

/** Messages for every resolved option that breaks its rule (empty when all are valid). */
export function workerOptionIssues(options: ResolvedRunWorkerOptions): string[] {
  const issues = numberIssues(options, WORKER_RULES);
  if (options.reservedOutputTokens >= options.contextWindow) issues.push(`\`reservedOutputTokens\` must be less than \`contextWindow\` (${options.contextWindow}) (got ${options.reservedOutputTokens})`);
  return issues;
}
