import type { Config } from '../config.js';
import type { PriceTable } from '../core/models.js';
import type { SessionLimits } from '../core/session-figures.js';
import type { GatewayOptions } from '../gateway/gateway-options.js';
import type { LlmSessionOpsOptions } from '../session/session-ops.js';
import type { RunWorkerOptions } from '../../workers/worker-options.js';
import { packageVersion } from './io.js';

/**
 * The one place the configuration meets the components: each function maps {@link Config} to one
 * component's options. Nothing below `src/cli` imports `Config` (eslint keeps it so); components
 * own their defaults (`GATEWAY_DEFAULTS`, `WORKER_DEFAULTS`) and the configuration's defaults are
 * read from them.
 */

/** `startGateway`'s options: the summariser endpoint, the session figures, access rules, HTTP and channels. */
export function gatewayOptions(config: Config): GatewayOptions {
  return {
    llm: llmEndpoint(config),
    contextWindow: config.llm.contextWindow,
    reservedOutputTokens: config.compaction.reservedOutputTokens,
    threshold: config.compaction.threshold,
    hygieneThreshold: config.compaction.hygieneThreshold,
    busyMode: config.busyMode,
    keyPrefix: config.redis.keyPrefix,
    queuePrefix: config.redis.queuePrefix,
    queueShards: config.redis.queueShards,
    transcriptRetention: config.transcriptMaxLen,
    usageRetention: config.usageRetention,
    channelStartTimeoutMs: config.channelStartTimeoutMs,
    compactionNotice: config.compaction.notice,
    budgets: config.budgets,
    prices: configuredPrices(config),
    channelLeaseMs: config.channelLeaseMs,
    groupMode: config.groupMode,
    allow: config.access.allow,
    rateLimitPerMinute: config.access.rateLimitPerMinute,
    maxMessageChars: config.access.maxMessageChars,
    host: config.http.host,
    port: config.http.port,
    httpTimeouts: config.http.timeouts,
    monitorToken: config.http.monitorToken,
    sessionLeaseTtlMs: config.workers.leaseTtlMs,
    channels: { telegram: config.telegram, discord: config.discord, groupTrigger: config.groupTrigger, ...(config.access.apiKeys ? { api: { keys: config.access.apiKeys } } : {}) },
    maxAttachmentBytes: config.attachments.maxBytes,
    attachmentTtlSeconds: config.attachments.ttlSeconds,
    seenTtlSeconds: config.seenTtlSeconds,
    transcribeModel: config.attachments.transcribeModel,
    heartbeatTtlMs: config.heartbeatTtlMs,
    version: packageVersion(),
    liveReplies: config.liveReplies.enabled,
    liveReplyEditIntervalMs: config.liveReplies.editIntervalMs,
    approvalAdmins: config.approvals.admins,
  };
}

/** `runWorker`'s options: the endpoint and models, the session figures, concurrency, lease and lock. */
export function workerOptions(config: Config): RunWorkerOptions {
  return {
    keyPrefix: config.redis.keyPrefix,
    queuePrefix: config.redis.queuePrefix,
    queueShards: config.redis.queueShards,
    workerShards: config.workers.shards,
    llm: { ...llmEndpoint(config), timeoutMs: config.llm.timeoutMs },
    contextWindow: config.llm.contextWindow,
    reservedOutputTokens: config.compaction.reservedOutputTokens,
    threshold: config.compaction.threshold,
    concurrency: config.workers.concurrency,
    maxModelCalls: config.llm.maxModelCalls,
    compactionNotice: config.compaction.notice,
    idleCompactSeconds: config.compaction.idleSeconds,
    transcriptRetention: config.transcriptMaxLen,
    usageRetention: config.usageRetention,
    leaseTtlMs: config.workers.leaseTtlMs,
    lockDurationMs: config.workers.turnLockMs,
    prices: configuredPrices(config),
    attachments: { vision: config.attachments.vision, transcribeModel: config.attachments.transcribeModel, ttlSeconds: config.attachments.ttlSeconds },
    budgets: config.budgets,
    heartbeatTtlMs: config.heartbeatTtlMs,
    version: packageVersion(),
    demo: config.demo,
    liveReplies: config.liveReplies.enabled,
    toolApproval: config.approvals.rules,
    approvalTimeoutMs: config.approvals.timeoutSeconds * 1000,
    mcpServers: config.mcp.servers,
  };
}

/** `createLlmSessionOps`'s options for an operator command (`chatgate compact`, `reset`) holding the lease `leaseTtlMs`. */
export function sessionOpsOptions(config: Config, leaseTtlMs: number): LlmSessionOpsOptions {
  return {
    baseURL: config.llm.baseUrl,
    apiKey: config.llm.apiKey,
    limits: sessionLimits(config),
    threshold: config.compaction.threshold,
    hygieneThreshold: config.compaction.hygieneThreshold,
    keyPrefix: config.redis.keyPrefix,
    transcriptRetention: config.transcriptMaxLen,
    usageRetention: config.usageRetention,
    leaseTtlMs,
    llmStream: config.liveReplies.enabled,
    prices: configuredPrices(config),
  };
}

/** The limits this configuration runs new sessions with (a session that recorded its own keeps those). */
export function sessionLimits(config: Config): SessionLimits {
  return {
    model: config.llm.model, summaryModel: config.llm.summaryModel, contextWindow: config.llm.contextWindow,
    reservedOutputTokens: config.compaction.reservedOutputTokens,
  };
}

/** The price table's additions: `CHATGATE_PRICES` and the main model's own price options. */
export function configuredPrices(config: Config): PriceTable {
  return { ...config.llm.prices, ...(config.llm.pricing ? { [config.llm.model]: config.llm.pricing } : {}) };
}

function llmEndpoint(config: Config): { baseURL: string; apiKey?: string; model: string; summaryModel: string } {
  return { baseURL: config.llm.baseUrl, apiKey: config.llm.apiKey, model: config.llm.model, summaryModel: config.llm.summaryModel };
}
