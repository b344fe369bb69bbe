const DECIMAL_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)$/;
const INTEGER_TEXT = /^[+-]?\d+$/;

/** The rule of one numeric option. Bounds are inclusive unless named `above`/`below`. */
export interface NumberRule {
  integer?: boolean;
  min?: number;
  max?: number;
  /** Exclusive lower bound. */
  above?: number;
  /** Exclusive upper bound. */
  below?: number;
  /** At most this many decimals (a USD limit: whole micro-USD, the ledger's unit). */
  decimals?: number;
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
 * A spend limit in USD: a number in [0, 1e9] with at most 6 decimals. One rule for
 * CHATGATE_BUDGET_*, the budgets file, `chatgate budgets set` and the stored limits; the ledger
 * counts whole micro-USD, exact integers (below Number.MAX_SAFE_INTEGER) up to 1e9 USD, so a
 * finer limit (`0.0000001`) would silently become another one ($0).
 */
export const USD_LIMIT: NumberRule = Object.freeze({ min: 0, max: 1_000_000_000, decimals: 6 });

/** The cap of one turn in USD: above 0, whole micro-USD as {@link USD_LIMIT} (a finer cap would become $0 and refuse every call). */
export const TURN_USD_CAP: NumberRule = Object.freeze({ above: 0, max: 1_000_000_000, decimals: 6 });

/** A spend limit in tokens: an integer in [0, Number.MAX_SAFE_INTEGER], counted exactly (the same four places as {@link USD_LIMIT}). */
export const TOKEN_LIMIT: NumberRule = Object.freeze(int(0, Number.MAX_SAFE_INTEGER));

/** The rules of the flat limit fields of the budgets file and the stored limits. */
export const FLAT_LIMIT_RULES: Readonly<Record<'dailyUsd' | 'monthlyUsd' | 'dailyTokens' | 'monthlyTokens', NumberRule>> = Object.freeze({
  dailyUsd: USD_LIMIT,
  monthlyUsd: USD_LIMIT,
  dailyTokens: TOKEN_LIMIT,
  monthlyTokens: TOKEN_LIMIT,
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
    if (!fitsRule(value, rule)) issues.push(`\`${name}\` must be ${ruleText(rule)} (got ${typeof value === 'number' ? plainNumber(value) : (JSON.stringify(value) ?? String(value))})`);
  }
  return issues;
}

/** Whether `value` is a finite number that keeps `rule`. */
export function fitsRule(value: unknown, rule: NumberRule): value is number {
  if (typeof value !== 'number' || !Number.isFinite(value) || (rule.integer && !Number.isInteger(value))) return false;
  if (rule.min !== undefined && value < rule.min) return false;
  if (rule.max !== undefined && value > rule.max) return false;
  if (rule.above !== undefined && value <= rule.above) return false;
  if (rule.decimals !== undefined && Number(value.toFixed(rule.decimals)) !== value) return false;
  return rule.below === undefined || value < rule.below;
}

/**
 * A number written as text (an environment value, a command-line flag) that keeps `rule`: decimal
 * digits with an optional sign and, unless the rule wants an integer, a point (`2.50`, `.5`).
 * @returns the number, or undefined when the text is no such number or breaks the rule.
 */
export function parseRuled(text: string, rule: NumberRule): number | undefined {
  const trimmed = text.trim();
  if (!(rule.integer ? INTEGER_TEXT : DECIMAL_TEXT).test(trimmed)) return undefined;
  const n = Number(trimmed);
  return fitsRule(n, rule) ? n : undefined;
}

/** What `rule` asks for, completing "must be …": `an integer ≥ 0`, `a number in (0, 1)`. */
export function ruleText(rule: NumberRule): string {
  const kind = rule.integer ? 'an integer' : 'a number';
  const low = rule.min !== undefined ? `[${rule.min}` : rule.above !== undefined ? `(${rule.above}` : undefined;
  const high = rule.max !== undefined ? `${rule.max}]` : rule.below !== undefined ? `${rule.below})` : undefined;
  const decimals = rule.decimals !== undefined ? ` with at most ${rule.decimals} decimals` : '';
  if (low && high) return `${kind} in ${low}, ${high}${decimals}`;
  if (low) return `${kind} ${low.startsWith('[') ? '≥' : '>'} ${low.slice(1)}${decimals}`;
  if (high) return `${kind} ${high.endsWith(']') ? '≤' : '<'} ${high.slice(0, -1)}${decimals}`;
  return `${kind}${decimals}`;
}

/** A number as written by a person, never in exponent notation (`1e+21` reads `1000000000000000000000`). */
export function plainNumber(n: number): string {
  return Number.isFinite(n) ? n.toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 20 }) : String(n);
}

/** A copy of `value` without its `undefined` fields, so spreading it over defaults keeps the defaults. */
export function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * "unknown key `ouput` (did you mean `output`?)", for each key of a file entry not in `allowed`,
 * joined by ", ". A suggestion is the allowed name nearest the key: the same but for case or a
 * plural `s`, one that contains it (`cached` → `cachedInput`), else within two edits.
 */
export function unknownKeysText(keys: readonly string[], allowed: readonly string[], noun = 'key'): string {
  return keys.map((key) => {
    const near = nearestName(key, allowed);
    return `unknown ${noun} \`${key}\`${near ? ` (did you mean \`${near}\`?)` : ''}`;
  }).join(', ');
}

/** The name of `allowed` nearest `key` (see {@link unknownKeysText}), or undefined past two edits. */
export function nearestName(key: string, allowed: readonly string[]): string | undefined {
  const k = key.toLowerCase();
  const distance = (name: string) => {
    const n = name.toLowerCase();
    return n === k || n === `${k}s` || `${n}s` === k || n.includes(k) ? 0 : editDistance(n, k);
  };
  return [...allowed].sort((a, b) => distance(a) - distance(b)).find((name) => distance(name) <= 2);
}

/** Levenshtein distance of two short strings. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}
