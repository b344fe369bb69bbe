import type { CompactionOutcome } from '../core/compaction/compaction-types.js';
import type { CompactionLayer } from '../core/session-figures.js';
import { estimateCostUsd, pricingOf, type CallUsage, type PriceTable } from '../core/models.js';
import { callRollup, compactionRollup, mergeRollups, summaryRollup, type ModelRollup } from '../usage/rollup-format.js';
import type { RedisClient } from './client.js';
import type { SessionKeys } from './keys.js';

export type { PriceTable };

/** Counter increments and absolute values applied to the usage hash by a commit. */
export interface UsageDelta {
  incr: Record<string, number>;
  set: Record<string, string>;
  /** What the change adds to the hourly and daily usage rollups, by model (src/usage), in the same commit. */
  rollup?: ModelRollup;
}

/** The usage ledger of one session. Cost is in micro-USD (integer) to stay exact in Redis. */
export interface UsageLedger {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  calls: number;
  costMicroUsd: number;
  /** Calls (the agent's and the summariser's) of models without a price: their cost is unknown, not 0. */
  unpricedCalls: number;
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

/** Estimated cost of a call in micro-USD at {@link pricingOf}; 0 when the price is unknown (the ledger counts its tokens). */
export function callCostMicroUsd(model: string, usage: CallUsage, prices: PriceTable = {}): number {
  const pricing = pricingOf(model, prices);
  return Math.round(estimateCostUsd(pricing, usage) * 1_000_000);
}

/** `{ unpricedCalls: 1 }` when `model` has no price (its cost reads "price unknown", never $0), else nothing. */
function unpriced(model: string, prices: PriceTable = {}): Record<string, number> {
  return pricingOf(model, prices) ? {} : { unpricedCalls: 1 };
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
      ...unpriced(model, prices),
    },
    set: { lastContextFill: (usage.promptTokens / contextWindow).toFixed(4) },
    rollup: callRollup(model, usage, prices),
  };
}

/** Ledger change of one model call whose provider reported no usage: a call, no tokens. */
export function unreportedCallDelta(model: string, prices?: PriceTable): UsageDelta {
  return { incr: { calls: 1, ...unpriced(model, prices) }, set: {}, rollup: callRollup(model, undefined, prices) };
}

/** Ledger change of one summariser call: its own counters, its cost added to the session's. */
export function summaryUsageDelta(model: string, usage: CallUsage, prices?: PriceTable): UsageDelta {
  return {
    incr: {
      summaryPromptTokens: usage.promptTokens,
      summaryCompletionTokens: usage.completionTokens,
      summaryCalls: 1,
      costMicroUsd: callCostMicroUsd(model, usage, prices),
      ...unpriced(model, prices),
    },
    set: {},
    rollup: summaryRollup(model, usage, prices),
  };
}

/**
 * Ledger change of one compaction; `session` (the model the session runs, the prices) prices what
 * it saved in the rollups. A noop or aborted compaction changed nothing and rolls up nothing.
 */
export function compactionUsageDelta(layer: CompactionLayer, outcome: CompactionOutcome, tokensRemoved: number, session?: { model: string; prices?: PriceTable }): UsageDelta {
  const delta: UsageDelta = { incr: { [`compactions:${layer}:${outcome}`]: 1, tokensRemovedByCompaction: Math.max(0, tokensRemoved) }, set: {} };
  if (session && outcome !== 'noop' && outcome !== 'aborted') delta.rollup = compactionRollup(session.model, tokensRemoved, session.prices);
  return delta;
}

/** Adds usage deltas together. */
export function mergeUsage(...deltas: UsageDelta[]): UsageDelta {
  const out: UsageDelta = { incr: {}, set: {} };
  for (const delta of deltas) {
    for (const [field, value] of Object.entries(delta.incr)) out.incr[field] = (out.incr[field] ?? 0) + value;
    Object.assign(out.set, delta.set);
    if (delta.rollup) out.rollup = mergeRollups(out.rollup, delta.rollup);
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
    unpricedCalls: num('unpricedCalls'),
    compactions,
    tokensRemovedByCompaction: num('tokensRemovedByCompaction'),
    lastContextFill: num('lastContextFill'),
    summaryPromptTokens: num('summaryPromptTokens'),
    summaryCompletionTokens: num('summaryCompletionTokens'),
    summaryCalls: num('summaryCalls'),
    resets: num('resets'),
  };
}
