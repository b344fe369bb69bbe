/**
 * Usage figures as every view shows them (CLI, API, dashboard), pure: the rollup counters turned
 * into tokens, calls and USD, money that says "price unknown" instead of a made-up $0, the
 * `--since` grammar, and the one sentence on what compaction was worth.
 */
import { formatMoney } from '../core/money.js';
import { UsageQueryError } from '../errors.js';
import type { RollupFigures, RollupBucket } from './rollup-format.js';

/** What a set of rollup counters reads as. USD figures cover the priced calls only. */
export interface UsageFigures {
  /** Prompt tokens not served from the provider's cache. */
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
  calls: number;
  costUsd: number;
  /** Calls of models without a price: their tokens count, their cost is unknown. */
  unpricedCalls: number;
  compactions: number;
  tokensRemoved: number;
  /** The summariser's calls: their tokens, calls and cost (part of the figures above). */
  compactionSpent: { tokens: number; calls: number; costUsd: number; unpricedCalls: number };
  /** What compactions saved: the removed tokens at the session model's input price (a floor). */
  compactionSaved: { tokens: number; costUsd: number; unpricedTokens: number };
}

/** A `--since` value resolved: which rollups are read, from when. */
export interface UsageSince {
  /** As given: `7d`, `24h`, `2026-12-01`. */
  text: string;
  period: RollupBucket['period'];
  fromMs: number;
}

/** Converts rollup counters to figures. */
export function toUsageFigures(raw: RollupFigures): UsageFigures {
  return {
    inputTokens: raw.in, cachedTokens: raw.cached, outputTokens: raw.out, calls: raw.calls, costUsd: usd(raw.cost),
    unpricedCalls: raw.unpriced, compactions: raw.compactions, tokensRemoved: raw.removed,
    compactionSpent: { tokens: raw.sumTokens, calls: raw.sumCalls, costUsd: usd(raw.sumCost), unpricedCalls: raw.sumUnpriced },
    compactionSaved: { tokens: raw.removed, costUsd: usd(raw.saved), unpricedTokens: raw.savedUnpriced },
  };
}

/** All tokens of the figures (input, cached and output). */
export function totalTokens(figures: UsageFigures): number {
  return figures.inputTokens + figures.cachedTokens + figures.outputTokens;
}

/**
 * A column of {@link formatMoney} texts for a fixed-width table: plain amounts are padded on the
 * right so their decimal points line up once the column is right-aligned (`$12.34 `, `$0.0108`);
 * other cells ("price unknown", "-") are left as they are.
 */
export function alignMoneyColumn(cells: readonly string[]): string[] {
  const fraction = (cell: string) => (/^\$[\d,]+\.\d+$/.test(cell) ? cell.length - cell.indexOf('.') : -1);
  const widest = Math.max(0, ...cells.map(fraction));
  return cells.map((cell) => (fraction(cell) > 0 ? cell.padEnd(cell.length + widest - fraction(cell)) : cell));
}

/** "compaction spent $0.04 and saved $0.91 in the last 7 days", or what it did without prices. */
export function compactionSentence(figures: UsageFigures, span: string): string {
  const { compactionSpent: spent, compactionSaved: saved } = figures;
  if (figures.compactions === 0 && spent.calls === 0) return `no compaction ${span}`;
  const spentText = spent.calls === 0 ? '$0.00 (no summariser call)' : formatMoney(spent.costUsd, spent.unpricedCalls);
  const savedText = saved.unpricedTokens > 0 && saved.costUsd === 0
    ? `${saved.tokens.toLocaleString('en-US')} prompt tokens (price unknown)`
    : `${formatMoney(saved.costUsd, saved.unpricedTokens)} (${saved.tokens.toLocaleString('en-US')} prompt tokens)`;
  return `compaction spent ${spentText} and saved ${savedText} ${span}`;
}

/** The words for a `--since` span: "in the last 7 days", "today", "since 2026-12-01". */
export function spanWords(since: UsageSince): string {
  const match = /^(\d+)([dh])$/.exec(since.text);
  if (!match) return `since ${since.text}`;
  const n = Number(match[1]);
  if (match[2] === 'd') return n === 1 ? 'today' : `in the last ${n} days`;
  return n === 1 ? 'this hour' : `in the last ${n} hours`;
}

/**
 * Parses `--since`: `Nd` (today and the N−1 days before, UTC, from the daily rollups), `Nh` (this
 * hour and the N−1 before, from the hourly ones) or a date `YYYY-MM-DD` (from its start, daily).
 * @throws UsageQueryError naming the rule, or the retention that a span exceeds.
 */
export function parseSince(text: string, nowMs: number, retention: { hourlyDays: number; dailyDays: number }): UsageSince {
  const match = /^(\d{1,5})([dh])$/.exec(text.trim());
  const dayStart = Math.floor(nowMs / 86_400_000) * 86_400_000;
  if (match) {
    const n = Number(match[1]);
    const hours = match[2] === 'h';
    const limit = hours ? retention.hourlyDays * 24 : retention.dailyDays;
    if (n < 1 || n > limit) throw new UsageQueryError(`since must be 1 to ${limit}${match[2]} (hourly rollups are kept ${retention.hourlyDays} days, daily ${retention.dailyDays}; got ${text})`);
    if (hours) return { text, period: 'hour', fromMs: Math.floor(nowMs / 3_600_000) * 3_600_000 - (n - 1) * 3_600_000 };
    return { text, period: 'day', fromMs: dayStart - (n - 1) * 86_400_000 };
  }
  const date = /^\d{4}-\d{2}-\d{2}$/.test(text) ? Date.parse(`${text}T00:00:00Z`) : Number.NaN;
  if (Number.isNaN(date) || date > nowMs) throw new UsageQueryError(`since must be Nd (days), Nh (hours) or a past date YYYY-MM-DD (got ${text})`);
  if (date < dayStart - (retention.dailyDays - 1) * 86_400_000) throw new UsageQueryError(`since ${text} is older than the daily rollups kept (${retention.dailyDays} days)`);
  return { text, period: 'day', fromMs: date };
}

function usd(micro: number): number {
  return micro / 1_000_000;
}
