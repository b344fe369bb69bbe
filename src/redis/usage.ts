import type { CompactionOutcome } from '../core/compaction/compaction-types.js';
import type { CompactionLayer } from '../core/session-figures.js';
import { estimateCostUsd, lookupModel, type CallUsage, type ModelPricing } from '../core/models.js';
import type { RedisClient } from './client.js';
import type { SessionKeys } from './keys.js';

/** Price overrides by exact model name (USD per 1M tokens); other models use the core table. */
export type PriceTable = Readonly<Record<string, ModelPricing>>;

/** Counter increments and absolute values applied to the usage hash by a commit. */
export interface UsageDelta {
  incr: Record<string, number>;
  set: Record<string, string>;
}

/** The usage ledger of one session. Cost is in micro-USD (integer) to stay exact in Redis. */
export interface UsageLedger {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  calls: number;
  costMicroUsd: number;
  /** `"<layer>:<outcome>"` → count, e.g. `in-loop:compacted`. */
  compactions: Record<string, number>;
  tokensRemovedByCompaction: number;
  /** Last real prompt tokens ÷ window (0..1+), 0 before the first call. */
  lastContextFill: number;
  /** Tokens and calls of compaction summaries (their cost is in `costMicroUsd`). */
  summaryPromptTokens: number;
  summaryCompletionTokens: number;
  summaryCalls: number;
  /** Resets of the session (`/reset`, `chatgate reset`). */
  resets: number;
}

/** Estimated cost of a call in micro-USD: `prices[model]`, else the core model table; 0 when unknown. */
export function callCostMicroUsd(model: string, usage: CallUsage, prices: PriceTable = {}): number {
  const pricing = prices[model] ?? lookupModel(model)?.pricing;
  return Math.round(estimateCostUsd(pricing, usage) * 1_000_000);
}

/** Ledger change of one model call; `contextWindow` turns prompt tokens into a fill ratio. */
export function callUsageDelta(model: string, usage: CallUsage, contextWindow: number, prices?: PriceTable): UsageDelta {
  return {
    incr: {
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      cachedTokens: usage.cachedTokens,
      calls: 1,
      costMicroUsd: callCostMicroUsd(model, usage, prices),
    },
    set: { lastContextFill: (usage.promptTokens / contextWindow).toFixed(4) },
  };
}

/** Ledger change of one summariser call: its own counters, its cost added to the session's. */
export function summaryUsageDelta(model: string, usage: CallUsage, prices?: PriceTable): UsageDelta {
  return {
    incr: {
      summaryPromptTokens: usage.promptTokens,
      summaryCompletionTokens: usage.completionTokens,
      summaryCalls: 1,
      costMicroUsd: callCostMicroUsd(model, usage, prices),
    },
    set: {},
  };
}

/** Ledger change of one compaction. */
export function compactionUsageDelta(layer: CompactionLayer, outcome: CompactionOutcome, tokensRemoved: number): UsageDelta {
  return { incr: { [`compactions:${layer}:${outcome}`]: 1, tokensRemovedByCompaction: Math.max(0, tokensRemoved) }, set: {} };
}

/** Adds usage deltas together. */
export function mergeUsage(...deltas: UsageDelta[]): UsageDelta {
  const out: UsageDelta = { incr: {}, set: {} };
  for (const delta of deltas) {
    for (const [field, value] of Object.entries(delta.incr)) out.incr[field] = (out.incr[field] ?? 0) + value;
    Object.assign(out.set, delta.set);
  }
  return out;
}

/** Reads a session's usage ledger (zeros for a new session). */
export async function readUsage(redis: RedisClient, keys: SessionKeys): Promise<UsageLedger> {
  return parseUsage(await redis.hgetall(keys.usage));
}

/** Parses a session's usage hash (missing fields read as zero). */
export function parseUsage(raw: Record<string, string>): UsageLedger {
  const num = (field: string): number => Number(raw[field] ?? 0);
  const compactions: Record<string, number> = {};
  for (const [field, value] of Object.entries(raw)) {
    if (field.startsWith('compactions:')) compactions[field.slice('compactions:'.length)] = Number(value);
  }
  return {
    promptTokens: num('promptTokens'),
    completionTokens: num('completionTokens'),
    cachedTokens: num('cachedTokens'),
    calls: num('calls'),
    costMicroUsd: num('costMicroUsd'),
    compactions,
    tokensRemovedByCompaction: num('tokensRemovedByCompaction'),
    lastContextFill: num('lastContextFill'),
    summaryPromptTokens: num('summaryPromptTokens'),
    summaryCompletionTokens: num('summaryCompletionTokens'),
    summaryCalls: num('summaryCalls'),
    resets: num('resets'),
  };
}
