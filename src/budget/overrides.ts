/**
 * Operators' limits stored in Redis (`chatgate budgets set`) and the read of every counter
 * (`chatgate budgets list`). One hash under `{budget}`, field `<level>:<subject>` → a versioned
 * JSON override that replaces that level's limits for that subject, both periods.
 *
 * Precedence, per level and subject: the stored override, else the budgets file (users only),
 * else the environment (`CHATGATE_BUDGET_<LEVEL>_*`). The scripts apply the same order.
 */
import { BUDGET_LEVELS, FLAT_LIMIT_FIELDS, fromFlatLimits, limitsLeft, periodWindow, toFlatLimits, type BudgetLevel, type BudgetPeriod, type BudgetSettings, type FlatLimits, type LevelLimits } from '../core/budget.js';
import { fitsRule, FLAT_LIMIT_RULES, numberIssues, ruleText } from '../core/option-checks.js';
import { GatewayError, StoredFormatError } from '../errors.js';
import type { RedisClient } from '../redis/client.js';
import { budgetKeys } from '../redis/keys.js';
import { configuredLimits, createBudgetLedger, DEPLOYMENT_SUBJECT, isUnreadableMarker, type BudgetSubject } from './ledger.js';

/** The format version of a stored override. */
export const STORED_LIMITS_VERSION = 1;

/** Where a subject's limits come from. */
export type LimitSource = 'override' | 'file' | 'environment';

/** One limit of one counter, as `chatgate budgets list` prints it. */
export interface BudgetRow {
  level: BudgetLevel;
  subject: string;
  period: BudgetPeriod;
  unit: 'usd' | 'tokens';
  used: number;
  /** For a USD row: tokens of calls to a model with no price, which its `used` leaves out. */
  unpricedTokens?: number;
  /** Null: the subject is unlimited (a stored override or the budgets file says so). */
  limit: number | null;
  left: number | null;
  resetsAtMs: number;
  source: LimitSource;
  /** An exhaustion marker holds for this limit: the subject's messages are answered at once until it goes. */
  blocked?: true;
  /** On every row of a subject whose marker this version cannot read: what it is and what drops it (it holds nothing). */
  markerUnreadable?: string;
}

/** A change of a subject's limits: a number sets a limit, null removes it, absent keeps it. */
export type LimitsPatch = { [K in keyof FlatLimits]?: number | null };

/** The operator's side of the budgets. */
export interface BudgetAdmin {
  /** Every counter of the current day and month with a limit in force, and those of unlimited subjects, by level then subject. */
  list(): Promise<BudgetRow[]>;
  /** The limits in force for a subject and where they come from. @throws what {@link parseStoredLimits} throws for its stored override. */
  limitsOf(level: BudgetLevel, subject: string): Promise<{ limits: LevelLimits | 'unlimited'; source: LimitSource }>;
  /** Stores an override: the limits in force with `patch` applied (or `unlimited`). @returns what is stored. */
  set(level: BudgetLevel, subject: string, patch: LimitsPatch | 'unlimited'): Promise<LevelLimits | 'unlimited'>;
  /** Removes a subject's override (the file's or environment's limits hold again); with `usage`, also zeroes this day's and month's counters. @returns whether an override was removed. */
  reset(level: BudgetLevel, subject: string, options?: { usage?: boolean }): Promise<boolean>;
}

/** The stored JSON of `limits`. */
export function toStoredLimits(limits: LevelLimits | 'unlimited'): string {
  return JSON.stringify(limits === 'unlimited' ? { v: STORED_LIMITS_VERSION, unlimited: true } : { v: STORED_LIMITS_VERSION, ...toFlatLimits(limits) });
}

/**
 * A stored override read back.
 * @throws StoredFormatError when it is not version {@link STORED_LIMITS_VERSION}; GatewayError
 * `STORED_LIMITS_INVALID` when a limit in it breaks its rule (a number ≥ 0, tokens an integer).
 */
export function parseStoredLimits(field: string, raw: string): LevelLimits | 'unlimited' {
  let o: Record<string, unknown> | null = null;
  try {
    o = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    // handled below: unreadable is refused like an unknown version
  }
  if (o === null || typeof o !== 'object' || o.v !== STORED_LIMITS_VERSION) {
    throw new StoredFormatError(`budget override ${field}`, o?.v, STORED_LIMITS_VERSION, `set it again with \`chatgate budgets set\` or remove it with \`chatgate budgets reset\``);
  }
  if (o.unlimited === true) return 'unlimited';
  const flat = Object.fromEntries(FLAT_LIMIT_FIELDS.filter((key) => o![key] !== undefined).map((key) => [key, o![key]]));
  const bad = numberIssues(flat, FLAT_LIMIT_RULES);
  if (bad.length > 0) {
    const [level, subject] = [field.slice(0, field.indexOf(':')), field.slice(field.indexOf(':') + 1)];
    const reset = `chatgate budgets reset ${level}${level === 'deployment' ? '' : ` ${subject}`}`;
    throw new GatewayError('STORED_LIMITS_INVALID', `the stored budget limits of ${level === 'deployment' ? 'the deployment' : `${level} ${subject}`} are unreadable (${bad.join('; ')}): remove them with \`${reset}\`, then set them again with \`chatgate budgets set\``);
  }
  return fromFlatLimits(flat as FlatLimits);
}

/** Creates the admin over `redis` (on a Cluster every budget key is on the `{budget}` slot). */
export function createBudgetAdmin(redis: RedisClient, options: { keyPrefix: string; settings: BudgetSettings; now?: () => number }): BudgetAdmin {
  const keys = budgetKeys(options.keyPrefix);
  const now = options.now ?? Date.now;
  const ledger = createBudgetLedger(redis, options);
  /** The limits in force of a subject, from its stored override (`raw`, null: none) or the configuration. */
  const limitsIn = (level: BudgetLevel, subject: string, raw: string | null | undefined) => {
    if (raw != null) return { limits: parseStoredLimits(`${level}:${subject}`, raw), source: 'override' as const };
    const fromFile = level === 'user' && options.settings.users[subject] !== undefined;
    return { limits: configuredLimits(options.settings, level, subject), source: fromFile ? 'file' as const : 'environment' as const };
  };
  const limitsOf = async (level: BudgetLevel, subject: string) => limitsIn(level, subject, await redis.hget(keys.limits, `${level}:${subject}`));
  return {
    limitsOf,
    async set(level, subject, patch) {
      const next = patch === 'unlimited' ? 'unlimited' : applyPatch((await limitsOf(level, subject)).limits, patch);
      // With the month's copy the scripts read, and without the marker the old limits left.
      await ledger.setOverride(level, subject, toStoredLimits(next));
      return next;
    },
    async reset(level, subject, resetOptions = {}) {
      const removed = await ledger.setOverride(level, subject, null);
      // Reservations in flight stay (their settle releases them); used amounts and the "said" marks go.
      if (resetOptions.usage) await ledger.resetUsage(level, subject);
      return removed;
    },
    async list() {
      const nowMs = now();
      // One read of the stored overrides, one scan of the month's counters, the states in batches.
      const stored = await redis.hgetall(keys.limits);
      const subjects = await subjectsOf(redis, keys, stored, options.settings, nowMs);
      const [states, blocked] = await Promise.all([ledger.statesOf(subjects), ledger.blockedOf(subjects)]);
      const rows: BudgetRow[] = [];
      for (const [k, { level, subject }] of subjects.entries()) {
        const { limits, source } = limitsIn(level, subject, stored[`${level}:${subject}`]);
        const own: BudgetRow[] = [];
        for (const counter of states[k]!) {
          const at = { level, subject, period: counter.period, resetsAtMs: counter.resetsAtMs, source };
          if (limits === 'unlimited') {
            const unpriced = counter.unpricedTokens ? { unpricedTokens: counter.unpricedTokens } : {};
            own.push({ ...at, unit: 'usd', used: counter.usedUsd, ...unpriced, limit: null, left: null }, { ...at, unit: 'tokens', used: counter.usedTokens, limit: null, left: null });
            continue;
          }
          const limit = limits[counter.period];
          for (const l of limitsLeft({ ...counter, limitUsd: limit?.usd, limitTokens: limit?.tokens })) own.push({ ...at, ...l });
        }
        // The limit whose marker holds (the gateway answers the subject's messages at once), or a marker to drop.
        const marker = blocked[k] ?? null;
        if (isUnreadableMarker(marker)) for (const row of own) row.markerUnreadable = marker.unreadable;
        else if (marker) for (const row of own) if (row.period === marker.period && row.unit === marker.unit) row.blocked = true;
        rows.push(...own);
      }
      return rows;
    },
  };
}

/** The subjects worth listing, by level then name: those with counters this month, an override or a file entry. */
async function subjectsOf(redis: RedisClient, keys: ReturnType<typeof budgetKeys>, stored: Record<string, string>, settings: BudgetSettings, nowMs: number): Promise<BudgetSubject[]> {
  const found = new Map<BudgetLevel, Set<string>>(BUDGET_LEVELS.map((level) => [level, new Set<string>()]));
  const add = (field: string) => {
    const at = field.indexOf(':');
    found.get(field.slice(0, at) as BudgetLevel)?.add(field.slice(at + 1));
  };
  for (const subject of Object.keys(settings.users)) found.get('user')!.add(subject);
  for (const field of Object.keys(stored)) add(field);
  // A subject's counters are the field `<level>:<subject>` of the month's hash (beside `limit2:…` and `$limits2`, no level).
  for (const field of await scanFields(redis, keys.counters(periodWindow('month', nowMs, settings.timeZone).id), '*')) add(field);
  return BUDGET_LEVELS.flatMap((level) => (level === 'deployment' ? [DEPLOYMENT_SUBJECT] : [...found.get(level)!].sort()).map((subject) => ({ level, subject })));
}

/** The fields of hash `key` matching `pattern`. */
async function scanFields(redis: RedisClient, key: string, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.hscan(key, cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    for (let k = 0; k < batch.length; k += 2) found.push(batch[k]!);
  } while (cursor !== '0');
  return found;
}

/** `current` with `patch` applied. @throws RangeError when a patched limit breaks its rule (nothing is stored then). */
function applyPatch(current: LevelLimits | 'unlimited', patch: LimitsPatch): LevelLimits {
  const flat: Record<string, number | undefined> = { ...toFlatLimits(current === 'unlimited' ? {} : current) };
  for (const key of FLAT_LIMIT_FIELDS) {
    const value: unknown = patch[key];
    if (value === undefined) continue;
    if (value !== null && !fitsRule(value, FLAT_LIMIT_RULES[key])) throw new RangeError(`\`${key}\` must be ${ruleText(FLAT_LIMIT_RULES[key])} or null (got ${JSON.stringify(value)})`);
    flat[key] = value ?? undefined;
  }
  return fromFlatLimits(flat);
}
