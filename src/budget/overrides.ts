/**
 * Operators' limits stored in Redis (`chatgate budgets set`) and the read of every counter
 * (`chatgate budgets list`). One hash under `{budget}`, field `<level>:<subject>` → a versioned
 * JSON override that replaces that level's limits for that subject, both periods.
 *
 * Precedence, per level and subject: the stored override, else the budgets file (users only),
 * else the environment (`CHATGATE_BUDGET_<LEVEL>_*`). The scripts apply the same order.
 */
import { BUDGET_LEVELS, BUDGET_PERIODS, FLAT_LIMIT_FIELDS, fromFlatLimits, limitsLeft, periodWindow, toFlatLimits, type BudgetLevel, type BudgetPeriod, type BudgetSettings, type FlatLimits, type LevelLimits } from '../core/budget.js';
import { StoredFormatError } from '../errors.js';
import type { RedisClient } from '../redis/client.js';
import { budgetKeys } from '../redis/keys.js';
import { configuredLimits, DEPLOYMENT_SUBJECT } from './ledger.js';

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
  limit: number;
  left: number;
  resetsAtMs: number;
  source: LimitSource;
}

/** A change of a subject's limits: a number sets a limit, null removes it, absent keeps it. */
export type LimitsPatch = { [K in keyof FlatLimits]?: number | null };

/** The operator's side of the budgets. */
export interface BudgetAdmin {
  /** Every counter of the current day and month with a limit in force, by level then subject. */
  list(): Promise<BudgetRow[]>;
  /** The limits in force for a subject and where they come from. @throws StoredFormatError on an override of another version. */
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

/** A stored override read back. @throws StoredFormatError when it is not version {@link STORED_LIMITS_VERSION}. */
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
  return fromFlatLimits(Object.fromEntries(FLAT_LIMIT_FIELDS.filter((key) => typeof o![key] === 'number').map((key) => [key, o![key]])));
}

/** Creates the admin over `redis` (on a Cluster every budget key is on the `{budget}` slot). */
export function createBudgetAdmin(redis: RedisClient, options: { keyPrefix: string; settings: BudgetSettings; now?: () => number }): BudgetAdmin {
  const keys = budgetKeys(options.keyPrefix);
  const now = options.now ?? Date.now;
  const limitsOf = async (level: BudgetLevel, subject: string) => {
    const raw = await redis.hget(keys.limits, `${level}:${subject}`);
    if (raw !== null) return { limits: parseStoredLimits(`${level}:${subject}`, raw), source: 'override' as const };
    const fromFile = level === 'user' && options.settings.users[subject] !== undefined;
    return { limits: configuredLimits(options.settings, level, subject), source: fromFile ? 'file' as const : 'environment' as const };
  };
  return {
    limitsOf,
    async set(level, subject, patch) {
      const next = patch === 'unlimited' ? 'unlimited' : applyPatch((await limitsOf(level, subject)).limits, patch);
      await redis.hset(keys.limits, `${level}:${subject}`, toStoredLimits(next));
      return next;
    },
    async reset(level, subject, resetOptions = {}) {
      const removed = (await redis.hdel(keys.limits, `${level}:${subject}`)) > 0;
      if (resetOptions.usage) {
        const nowMs = now();
        for (const period of BUDGET_PERIODS) {
          // Reservations in flight stay (their settle releases them); used amounts and the "said" marks go.
          await redis.hdel(keys.counter(level, subject, periodWindow(period, nowMs, options.settings.timeZone).id), 'um', 'ut', 'nusd', 'ntokens', 'xusd', 'xtokens');
        }
      }
      return removed;
    },
    async list() {
      const nowMs = now();
      const rows: BudgetRow[] = [];
      for (const level of BUDGET_LEVELS) {
        for (const subject of await subjectsOf(redis, keys, level, options.settings, nowMs)) {
          const { limits, source } = await limitsOf(level, subject);
          if (limits === 'unlimited') continue;
          for (const period of BUDGET_PERIODS) {
            const window = periodWindow(period, nowMs, options.settings.timeZone);
            const [um, ut] = await redis.hmget(keys.counter(level, subject, window.id), 'um', 'ut');
            const counter = { level, subject, period, usedUsd: Number(um ?? 0) / 1_000_000, usedTokens: Number(ut ?? 0), limitUsd: limits[period]?.usd, limitTokens: limits[period]?.tokens, resetsAtMs: window.endsAtMs };
            for (const l of limitsLeft(counter)) rows.push({ level, subject, period, ...l, resetsAtMs: window.endsAtMs, source });
          }
        }
      }
      return rows;
    },
  };
}

/** The subjects of a level worth listing: those with a counter this day or month, an override or a file entry. */
async function subjectsOf(redis: RedisClient, keys: ReturnType<typeof budgetKeys>, level: BudgetLevel, settings: BudgetSettings, nowMs: number): Promise<string[]> {
  if (level === 'deployment') return [DEPLOYMENT_SUBJECT];
  const found = new Set<string>(level === 'user' ? Object.keys(settings.users) : []);
  for (const field of await redis.hkeys(keys.limits)) if (field.startsWith(`${level}:`)) found.add(field.slice(level.length + 1));
  for (const period of BUDGET_PERIODS) {
    const id = periodWindow(period, nowMs, settings.timeZone).id;
    const head = keys.counter(level, '', id).slice(0, -(id.length + 1));
    for (const key of await scanKeys(redis, `${escapeGlob(head)}*:${id}`)) found.add(key.slice(head.length, key.length - id.length - 1));
  }
  return [...found].sort();
}

/** Keys matching `pattern` on every primary (a Cluster) or the one server. */
async function scanKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  const nodes = 'nodes' in redis && typeof redis.nodes === 'function' ? redis.nodes('master') : [redis];
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      found.push(...batch);
    } while (cursor !== '0');
  }
  return found;
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

function applyPatch(current: LevelLimits | 'unlimited', patch: LimitsPatch): LevelLimits {
  const flat: Record<string, number | undefined> = { ...toFlatLimits(current === 'unlimited' ? {} : current) };
  for (const key of FLAT_LIMIT_FIELDS) if (patch[key] !== undefined) flat[key] = patch[key] ?? undefined;
  return fromFlatLimits(flat);
}
