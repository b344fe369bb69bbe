/**
 * The stored format of the usage rollups (version 1), pure: what one commit adds to a session's
 * hourly and daily rollup hashes, and how a reader parses them back. A rollup hash holds one
 * counter per (metric, model, user) as the field `["<metric>","<model>","<user>"]` (JSON), plus
 * `format` = "1". Costs are integer micro-USD; a call of a model without a price adds its tokens
 * and one `unpriced` (never a cost of 0 that reads as free).
 */
import { estimateCostUsd, pricingOf, type PriceTable, type UsageTokens } from '../core/models.js';
import { StoredFormatError } from '../errors.js';

/** The rollup hashes' format version (the `format` field). */
export const ROLLUP_FORMAT = 1;

/** Hours of hourly rollups kept by default: 14 days (`CHATGATE_USAGE_HOURLY_DAYS`). */
export const DEFAULT_HOURLY_DAYS = 14;
/** Days of daily rollups kept by default (`CHATGATE_USAGE_DAILY_DAYS`). */
export const DEFAULT_DAILY_DAYS = 400;

/**
 * The counters of a rollup. All model calls (the agent's and the summariser's): `in` prompt tokens
 * not cached, `cached` cached prompt tokens, `out` completion tokens, `calls`, `cost` (micro-USD of
 * the priced calls), `unpriced` (calls whose model has no price). The summariser's share of them:
 * `sumTokens`, `sumCalls`, `sumCost`, `sumUnpriced`. Compactions that changed the projection:
 * `compactions`, `removed` (tokens), `saved` (micro-USD: the removed tokens at the session model's
 * input price), `savedUnpriced` (removed tokens of a model without a price).
 */
export const ROLLUP_METRICS = [
  'in', 'cached', 'out', 'calls', 'cost', 'unpriced',
  'sumTokens', 'sumCalls', 'sumCost', 'sumUnpriced',
  'compactions', 'removed', 'saved', 'savedUnpriced',
] as const;

/** One rollup counter. */
export type RollupMetric = (typeof ROLLUP_METRICS)[number];

/** A full set of counters. */
export type RollupFigures = Record<RollupMetric, number>;

/** What one change adds, by model. */
export type ModelRollup = Record<string, Partial<RollupFigures>>;

/** One parsed row of a rollup hash. */
export interface RollupRow {
  model: string;
  /** `<channel>:<userId>`, or '' when the change had no user (gateway hygiene, the CLI). */
  user: string;
  figures: RollupFigures;
}

/** A rollup period: the bucket's label in key names and its start, UTC. */
export interface RollupBucket {
  period: 'hour' | 'day';
  /** `2026-12-02T10` (hour) or `2026-12-02` (day). */
  label: string;
  startMs: number;
  endMs: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** A set of zero counters. */
export function zeroFigures(): RollupFigures {
  return Object.fromEntries(ROLLUP_METRICS.map((metric) => [metric, 0])) as RollupFigures;
}

/** Adds `more` into `into` (in place). */
export function addFigures(into: RollupFigures, more: Partial<RollupFigures>): RollupFigures {
  for (const metric of ROLLUP_METRICS) into[metric] += more[metric] ?? 0;
  return into;
}

/** The rollup of one agent model call; `usage` undefined when the provider reported none. */
export function callRollup(model: string, usage: UsageTokens | undefined, prices?: PriceTable): ModelRollup {
  return { [model]: { ...tokenFigures(usage), calls: 1, ...costFigures(model, usage, prices) } };
}

/** The rollup of one summariser call (counted as a model call, and in the summariser's share). */
export function summaryRollup(model: string, usage: UsageTokens, prices?: PriceTable): ModelRollup {
  const cost = costFigures(model, usage, prices);
  return {
    [model]: {
      ...tokenFigures(usage), calls: 1, ...cost,
      sumTokens: usage.promptTokens + usage.completionTokens, sumCalls: 1, sumCost: cost.cost ?? 0, sumUnpriced: cost.unpriced ?? 0,
    },
  };
}

/**
 * The rollup of one compaction that removed `removedTokens` from a session running `model`: the
 * saving is those tokens at the model's input price (a floor: every later call would have sent them).
 */
export function compactionRollup(model: string, removedTokens: number, prices?: PriceTable): ModelRollup {
  const removed = Math.max(0, removedTokens);
  const pricing = pricingOf(model, prices);
  const saving = pricing ? { saved: Math.round(removed * pricing.input) } : { savedUnpriced: removed };
  return { [model]: { compactions: 1, removed, ...saving } };
}

/** Adds rollups together. */
export function mergeRollups(...rollups: Array<ModelRollup | undefined>): ModelRollup {
  const out: ModelRollup = {};
  for (const rollup of rollups) {
    for (const [model, figures] of Object.entries(rollup ?? {})) {
      const into = (out[model] ??= {});
      for (const [metric, value] of Object.entries(figures) as Array<[RollupMetric, number]>) into[metric] = (into[metric] ?? 0) + value;
    }
  }
  return out;
}

/** The hash fields (and increments) of `rollup` for `user`; zero counters are left out. */
export function rollupFields(rollup: ModelRollup, user: string): Record<string, number> {
  const fields: Record<string, number> = {};
  for (const [model, figures] of Object.entries(rollup)) {
    for (const [metric, value] of Object.entries(figures)) {
      if (value) fields[JSON.stringify([metric, model, user])] = value;
    }
  }
  return fields;
}

/**
 * Parses a rollup hash (empty: no rows). @throws StoredFormatError when it was written in
 * another format.
 */
export function parseRollupHash(raw: Record<string, string>, what: string): RollupRow[] {
  if (Object.keys(raw).length === 0) return [];
  if (raw.format !== String(ROLLUP_FORMAT)) throw new StoredFormatError(what, raw.format, ROLLUP_FORMAT, 'run one chatgate version per key prefix');
  const rows = new Map<string, RollupRow>();
  for (const [field, value] of Object.entries(raw)) {
    if (field === 'format') continue;
    const [metric, model, user] = JSON.parse(field) as [RollupMetric, string, string];
    const key = JSON.stringify([model, user]);
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { model, user, figures: zeroFigures() }));
    if (metric in row.figures) row.figures[metric] += Number(value);
  }
  return [...rows.values()];
}

/** The hourly or daily bucket holding `ms` (UTC). */
export function bucketOf(period: 'hour' | 'day', ms: number): RollupBucket {
  const size = period === 'hour' ? HOUR_MS : DAY_MS;
  const startMs = Math.floor(ms / size) * size;
  const iso = new Date(startMs).toISOString();
  return { period, label: period === 'hour' ? iso.slice(0, 13) : iso.slice(0, 10), startMs, endMs: startMs + size };
}

/** The buckets from the one holding `fromMs` to the one holding `toMs`, oldest first. */
export function bucketsBetween(period: 'hour' | 'day', fromMs: number, toMs: number): RollupBucket[] {
  const out: RollupBucket[] = [];
  for (let bucket = bucketOf(period, fromMs); bucket.startMs <= toMs; bucket = bucketOf(period, bucket.endMs)) out.push(bucket);
  return out;
}

function tokenFigures(usage: UsageTokens | undefined): Partial<RollupFigures> {
  if (!usage) return {};
  const cached = Math.min(usage.cachedTokens ?? 0, usage.promptTokens);
  return { in: usage.promptTokens - cached, cached, out: usage.completionTokens };
}

function costFigures(model: string, usage: UsageTokens | undefined, prices: PriceTable | undefined): { cost?: number; unpriced?: number } {
  const pricing = pricingOf(model, prices);
  if (!pricing) return { unpriced: 1 };
  return { cost: usage ? Math.round(estimateCostUsd(pricing, usage) * 1_000_000) : 0 };
}
