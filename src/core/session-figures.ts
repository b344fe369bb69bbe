import type { CompactionOutcome } from './compaction/compaction-types.js';

/**
 * The figures every surface shows about a session's context (chat commands, CLI, API, dashboard),
 * computed once here. Pure.
 *
 * Fill is the next request's tokens over the *usable* window (context window − output reserve);
 * both triggers are shares of that same usable window (defaults 50% and 85%).
 */

/** Which trigger (or path) ran a compaction. */
export type CompactionLayer = 'in-loop' | 'hygiene' | 'reactive' | 'manual' | 'idle';

/** The model limits a session runs with; its meta remembers them (the worker writes them every turn). */
export interface SessionLimits {
  /** Main model. */
  model: string;
  /** Model that writes the session's summaries. */
  summaryModel: string;
  /** The model's context window, tokens. */
  contextWindow: number;
  /** Output reserve subtracted from the window before any threshold, tokens. */
  reservedOutputTokens: number;
}

/** The two compaction triggers, as shares of the usable window. */
export interface CompactionTriggers {
  /** In-loop compressor trigger, in (0, 1]. */
  threshold: number;
  /** Gateway hygiene trigger, in (0, 1]. */
  hygieneThreshold: number;
}

/** A session's context figures, as every surface shows them. */
export interface ContextFigures {
  /** Tokens of the next request (system prompt, tools, notes, projection). */
  tokens: number;
  /** The model's context window, tokens. */
  contextWindow: number;
  /** Output reserve, tokens. */
  reservedOutputTokens: number;
  /** `contextWindow − reservedOutputTokens`, at least 1. */
  usableWindow: number;
  /** `tokens / usableWindow`. */
  fill: number;
  /** In-loop trigger as a share of the usable window (e.g. 0.5). */
  compressAt: number;
  /** Hygiene trigger as a share of the usable window (e.g. 0.85). */
  hygieneAt: number;
  /** In-loop trigger in tokens (`floor(usable × threshold)`, as the compressor computes it). */
  compressTokens: number;
  /** Hygiene trigger in tokens. */
  hygieneTokens: number;
}

/** Outcomes that changed the projection: only these count as compactions. */
const EFFECTIVE_OUTCOMES: readonly CompactionOutcome[] = Object.freeze(['compacted', 'pruned', 'fallback']);

/** The usable window: context window minus output reserve, at least 1 token. */
export function usableWindowOf(limits: Pick<SessionLimits, 'contextWindow' | 'reservedOutputTokens'>): number {
  return Math.max(1, limits.contextWindow - limits.reservedOutputTokens);
}

/** Fill of a request of `tokens`: tokens ÷ usable window (may exceed 1). */
export function fillOf(tokens: number, limits: Pick<SessionLimits, 'contextWindow' | 'reservedOutputTokens'>): number {
  return tokens / usableWindowOf(limits);
}

/** All context figures of a next request of `tokens` under `limits` and `triggers`. */
export function contextFigures(tokens: number, limits: Pick<SessionLimits, 'contextWindow' | 'reservedOutputTokens'>, triggers: CompactionTriggers): ContextFigures {
  const usableWindow = usableWindowOf(limits);
  return {
    tokens, contextWindow: limits.contextWindow, reservedOutputTokens: limits.reservedOutputTokens, usableWindow,
    fill: tokens / usableWindow, compressAt: triggers.threshold, hygieneAt: triggers.hygieneThreshold,
    compressTokens: Math.floor(usableWindow * triggers.threshold), hygieneTokens: Math.floor(usableWindow * triggers.hygieneThreshold),
  };
}

/** True for an outcome that changed the projection (`compacted`, `pruned`, `fallback`); `noop` and `aborted` did not. */
export function isEffectiveCompaction(outcome: CompactionOutcome): boolean {
  return EFFECTIVE_OUTCOMES.includes(outcome);
}

/**
 * Compactions that changed the projection, from counters keyed `"<layer>:<outcome>"` (the usage
 * ledger's shape); `noop` and `aborted` are left out.
 */
export function effectiveCompactions(counts: Readonly<Record<string, number>>): number {
  let total = 0;
  for (const [key, n] of Object.entries(counts)) {
    if (isEffectiveCompaction(key.slice(key.indexOf(':') + 1) as CompactionOutcome)) total += n;
  }
  return total;
}

/** A share as a percentage with one decimal, e.g. `48.9%`: how every surface prints fill. */
export function formatShare(share: number): string {
  return `${(share * 100).toFixed(1)}%`;
}

/**
 * The context line every text surface prints, e.g. `2,003 of 4,096 tokens (48.9%; window 8,192,
 * 4,096 reserved for the answer); compaction at 50% (2,048), hygiene at 85% (3,481)`.
 */
export function describeContext(figures: ContextFigures): string {
  const reserve = figures.reservedOutputTokens > 0 ? `, ${formatTokens(figures.reservedOutputTokens)} reserved for the answer` : '';
  return `${formatTokens(figures.tokens)} of ${formatTokens(figures.usableWindow)} tokens (${formatShare(figures.fill)}; window ${formatTokens(figures.contextWindow)}${reserve}); `
    + `compaction at ${wholePercent(figures.compressAt)} (${formatTokens(figures.compressTokens)}), hygiene at ${wholePercent(figures.hygieneAt)} (${formatTokens(figures.hygieneTokens)})`;
}

/** A token count with thousands separators, e.g. `12,013`. */
export function formatTokens(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

function wholePercent(share: number): string {
  return `${Number((share * 100).toFixed(1))}%`;
}

/** Share of prompt tokens the provider served from its cache (0..1; 0 before the first call). */
export function cacheShareOf(promptTokens: number, cachedTokens: number): number {
  return promptTokens > 0 ? Math.min(1, Math.max(0, cachedTokens / promptTokens)) : 0;
}
