import type { CompactionOutcome } from '../core/compaction-types.js';
import type { RedisClient } from './client.js';
import type { SessionKeys } from './keys.js';

/** Price of a model in USD per million tokens. */
export interface ModelPrice {
  inputPerMTok: number;
  outputPerMTok: number;
  /** Price of cached prompt tokens; default the input price. */
  cachedInputPerMTok?: number;
}

/** Built-in prices (USD per million tokens); override or extend with the `prices` option. */
export const DEFAULT_PRICES: Readonly<Record<string, ModelPrice>> = {
  'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10, cachedInputPerMTok: 1.25 },
  'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6, cachedInputPerMTok: 0.075 },
  'gpt-4.1': { inputPerMTok: 2, outputPerMTok: 8, cachedInputPerMTok: 0.5 },
  'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6, cachedInputPerMTok: 0.1 },
  'gpt-4.1-nano': { inputPerMTok: 0.1, outputPerMTok: 0.4, cachedInputPerMTok: 0.025 },
  'gpt-5': { inputPerMTok: 1.25, outputPerMTok: 10, cachedInputPerMTok: 0.125 },
  'gpt-5-mini': { inputPerMTok: 0.25, outputPerMTok: 2, cachedInputPerMTok: 0.025 },
};

/** Token usage of one model call, as the provider reported it. */
export interface CallUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

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
}

/** Estimated cost of a call in micro-USD (0 for unknown models). */
export function callCostMicroUsd(model: string, usage: CallUsage, prices: Readonly<Record<string, ModelPrice>> = DEFAULT_PRICES): number {
  const price = prices[model] ?? prices[model.replace(/^[^/]+\//, '')];
  if (!price) return 0;
  const uncached = Math.max(0, usage.promptTokens - usage.cachedTokens);
  const cachedPrice = price.cachedInputPerMTok ?? price.inputPerMTok;
  return Math.round(uncached * price.inputPerMTok + usage.cachedTokens * cachedPrice + usage.completionTokens * price.outputPerMTok);
}

/** Ledger change of one model call; `contextWindow` turns prompt tokens into a fill ratio. */
export function callUsageDelta(model: string, usage: CallUsage, contextWindow: number, prices?: Readonly<Record<string, ModelPrice>>): UsageDelta {
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

/** Ledger change of one compaction. */
export function compactionUsageDelta(layer: string, outcome: CompactionOutcome, tokensRemoved: number): UsageDelta {
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
  const raw = await redis.hgetall(keys.usage);
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
  };
}
