/** The rule of one numeric option. Bounds are inclusive unless named `above`/`below`. */
export interface NumberRule {
  integer?: boolean;
  min?: number;
  max?: number;
  /** Exclusive lower bound. */
  above?: number;
  /** Exclusive upper bound. */
  below?: number;
}

/** The rule of an integer option: at least `min`, and at most `max` when given. */
export function int(min: number, max?: number): NumberRule {
  return max === undefined ? { integer: true, min } : { integer: true, min, max };
}

/** The rule of a share of the context window: a number strictly between 0 and 1. */
export const SHARE: NumberRule = Object.freeze({ above: 0, below: 1 });

/** The rules of the options both the gateway and the workers take, written once for both. */
export const SHARED_OPTION_RULES: Readonly<Record<string, NumberRule>> = Object.freeze({
  contextWindow: int(1),
  reservedOutputTokens: int(0),
  threshold: SHARE,
  transcriptRetention: int(0),
  heartbeatTtlMs: int(300),
});

/**
 * One message per option of `values` that breaks its rule in `rules`, naming the option and the
 * rule: `` `threshold` must be a number in (0, 1) (got 1.5) ``. Options that are undefined are skipped. Pure.
 */
export function numberIssues(values: object, rules: Readonly<Record<string, NumberRule>>): string[] {
  const issues: string[] = [];
  const record = values as Record<string, unknown>;
  for (const [name, rule] of Object.entries(rules)) {
    const value = record[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !fits(value, rule)) issues.push(`\`${name}\` must be ${describe(rule)} (got ${String(value)})`);
  }
  return issues;
}

function fits(value: number, rule: NumberRule): boolean {
  if (Number.isNaN(value) || (rule.integer && !Number.isInteger(value))) return false;
  if (rule.min !== undefined && value < rule.min) return false;
  if (rule.max !== undefined && value > rule.max) return false;
  if (rule.above !== undefined && value <= rule.above) return false;
  return rule.below === undefined || value < rule.below;
}

function describe(rule: NumberRule): string {
  const kind = rule.integer ? 'an integer' : 'a number';
  const low = rule.min !== undefined ? `[${rule.min}` : rule.above !== undefined ? `(${rule.above}` : undefined;
  const high = rule.max !== undefined ? `${rule.max}]` : rule.below !== undefined ? `${rule.below})` : undefined;
  if (low && high) return `${kind} in ${low}, ${high}`;
  if (low) return `${kind} ${low.startsWith('[') ? '≥' : '>'} ${low.slice(1)}`;
  if (high) return `${kind} ${high.endsWith(']') ? '≤' : '<'} ${high.slice(0, -1)}`;
  return kind;
}

/** A copy of `value` without its `undefined` fields, so spreading it over defaults keeps the defaults. */
export function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
