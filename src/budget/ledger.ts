/**
 * The budget counters in Redis: reserve a call's worst case against every level in one script,
 * settle it with the provider's usage, read what is left. Keys: `budgetKeys` (one hash tag).
 */
import { randomUUID } from 'node:crypto';
import { BUDGET_LEVELS, BUDGET_PERIODS, periodWindow, type BudgetBreach, type BudgetLevel, type BudgetPeriod, type BudgetSettings, type CounterState, type LevelLimits } from '../core/budget.js';

export type { CounterState } from '../core/budget.js';
import type { RedisClient } from '../redis/client.js';
import { budgetKeys } from '../redis/keys.js';
import { runScriptWithOptions } from '../redis/scripts.js';

/** Counters are kept this long after their period ends (what `/usage` and the CLI show of the last one). */
const KEEP_AFTER_PERIOD_S = 35 * 86_400;

/** The subject of the deployment level's counters and stored override (`deployment:all`). */
export const DEPLOYMENT_SUBJECT = 'all';

/** Default lease of a reservation: a worker dead between reserve and settle frees it after this. */
export const DEFAULT_RESERVATION_LEASE_MS = 15 * 60_000;

/**
 * Whom a call counts for: the user (`<channel>:<userId>`) and the chat (session id). A call always
 * counts for the deployment; a level without a subject (the CLI's compaction has no user) is skipped.
 */
export interface BudgetScope {
  user?: string;
  chat?: string;
}

/** What one call may cost at most: micro-USD (undefined: the model has no price) and tokens. */
export interface CallNeed {
  micro?: number;
  tokens: number;
}

/** A limit reached, or brought to the notice share, by a settled call. */
export interface BudgetEvent extends BudgetBreach {
  kind: 'near' | 'exhausted';
  subject: string;
}

/** Options of {@link createBudgetLedger}. */
export interface BudgetLedgerOptions {
  keyPrefix: string;
  settings: BudgetSettings;
  /** Lease of a reservation, ms. Default {@link DEFAULT_RESERVATION_LEASE_MS}. */
  reservationLeaseMs?: number;
  /** Clock (epoch ms); injected by tests. Default `Date.now`. */
  now?: () => number;
}

/** The budget counters of one deployment. */
export interface BudgetLedger {
  /**
   * Reserves `need` against every level of `scope`. @returns a reservation id, or the limit that
   * holds (with `event` when this refusal is the first word of it: no settle said it was used up).
   */
  reserve(scope: BudgetScope, need: CallNeed): Promise<{ id: string } | { breach: BudgetBreach; event?: BudgetEvent }>;
  /** Settles reservation `id` with the call's real cost; @returns the limits it brought to notice or used up. */
  settle(scope: BudgetScope, id: string, used: CallNeed): Promise<BudgetEvent[]>;
  /** The limit that holds for `scope` now, if any (no write: the gateway's early answer). */
  check(scope: BudgetScope): Promise<BudgetBreach | null>;
  /** Every counter of `scope` with its limits. */
  state(scope: BudgetScope): Promise<CounterState[]>;
}

interface CounterSpec {
  level: BudgetLevel;
  period: BudgetPeriod;
  /** Undefined: the scope has no subject at this level, the counter is skipped. */
  subject?: string;
  key: string;
  endsAtMs: number;
  arg: { field: string; period: BudgetPeriod; limitMicro: number; limitTokens: number; expireAt: number } | { skip: true };
}

/** Creates the ledger over `redis` (any connection; on a Cluster every key is on the `{budget}` slot). */
export function createBudgetLedger(redis: RedisClient, options: BudgetLedgerOptions): BudgetLedger {
  const keys = budgetKeys(options.keyPrefix);
  const now = options.now ?? Date.now;
  const leaseMs = options.reservationLeaseMs ?? DEFAULT_RESERVATION_LEASE_MS;
  // A skipped counter still fills its key slot (the scripts take nine keys): with a key they never touch.
  const specs = (scope: BudgetScope, nowMs: number) => counterSpecs(scope, nowMs, options.settings, keys.counter, keys.reservations);
  const scriptKeys = (counters: CounterSpec[]) => [keys.reservations, keys.reservationData, keys.limits, ...counters.map((c) => c.key)];
  const run = async (scope: BudgetScope, extra: object, dryRun: boolean) => {
    const nowMs = now();
    const counters = specs(scope, nowMs);
    const reply = JSON.parse(String(await runScriptWithOptions(redis, 'budgetReserve', scriptKeys(counters), { now: nowMs, leaseMs, dryRun, counters: counters.map((c) => c.arg), ...extra }))) as ReserveReply;
    return { reply, counters };
  };
  return {
    async reserve(scope, need) {
      const id = randomUUID();
      const { reply, counters } = await run(scope, { id, needMicro: need.micro ?? -1, needTokens: need.tokens }, false);
      if (reply.ok) return { id };
      const counter = counters[reply.i! - 1]!;
      const breach = toBreach(counter, reply.unit!, reply.limit!);
      return reply.first ? { breach, event: { ...breach, kind: 'exhausted', subject: counter.subject! } } : { breach };
    },
    async settle(scope, id, used) {
      const counters = specs(scope, now());
      const args = { id, micro: used.micro ?? 0, tokens: used.tokens, noticePercent: options.settings.noticePercent, counters: counters.map((c) => c.arg) };
      const reply = JSON.parse(String(await runScriptWithOptions(redis, 'budgetSettle', scriptKeys(counters), args))) as { events: Array<{ i: number; kind: 'near' | 'exhausted'; unit: 'usd' | 'tokens'; limit: number }> };
      return (Array.isArray(reply.events) ? reply.events : []).map((e) => ({ ...toBreach(counters[e.i - 1]!, e.unit, e.limit), kind: e.kind, subject: counters[e.i - 1]!.subject! }));
    },
    async check(scope) {
      const { reply, counters } = await run(scope, { needMicro: 0, needTokens: 0 }, true);
      return reply.ok ? null : toBreach(counters[reply.i! - 1]!, reply.unit!, reply.limit!);
    },
    async state(scope) {
      const { reply, counters } = await run(scope, { needMicro: -1, needTokens: -1 }, true);
      return counters.flatMap((c, k) => (c.subject === undefined ? [] : [toState(c, c.subject, reply.state?.[k] ?? [0, 0, 0, 0, -1, -1])]));
    },
  };
}

interface ReserveReply {
  ok: boolean;
  first?: boolean;
  i?: number;
  unit?: 'usd' | 'tokens';
  limit?: number;
  state?: number[][];
}

/** The six counters of a scope (user, chat, deployment × day, month), in the scripts' order. */
function counterSpecs(scope: BudgetScope, nowMs: number, settings: BudgetSettings, counterKey: (level: string, subject: string, periodId: string) => string, unusedKey: string): CounterSpec[] {
  return BUDGET_LEVELS.flatMap((level) => BUDGET_PERIODS.map((period): CounterSpec => {
    const subject = level === 'user' ? scope.user : level === 'chat' ? scope.chat : DEPLOYMENT_SUBJECT;
    const window = periodWindow(period, nowMs, settings.timeZone);
    if (subject === undefined) return { level, period, key: unusedKey, endsAtMs: window.endsAtMs, arg: { skip: true } };
    const limits = configuredLimits(settings, level, subject)[period];
    return {
      level, period, subject, key: counterKey(level, subject, window.id), endsAtMs: window.endsAtMs,
      arg: {
        field: `${level}:${subject}`, period,
        limitMicro: limits?.usd === undefined ? -1 : Math.round(limits.usd * 1_000_000),
        limitTokens: limits?.tokens ?? -1,
        expireAt: Math.ceil(window.endsAtMs / 1000) + KEEP_AFTER_PERIOD_S,
      },
    };
  }));
}

/** The configured limits of a level for `subject` (a budgets-file entry replaces the user level's); a stored override wins over these. */
export function configuredLimits(settings: BudgetSettings, level: BudgetLevel, subject: string): LevelLimits {
  if (level !== 'user') return settings[level];
  const own = settings.users[subject];
  return own === 'unlimited' ? {} : own ?? settings.user;
}

function toBreach(c: CounterSpec, unit: 'usd' | 'tokens', limit: number): BudgetBreach {
  return { level: c.level, period: c.period, unit, limit: unit === 'usd' ? limit / 1_000_000 : limit, resetsAtMs: c.endsAtMs };
}

function toState(c: CounterSpec, subject: string, s: number[]): CounterState {
  const [um = 0, ut = 0, , , lm = -1, lt = -1] = s;
  return {
    level: c.level, period: c.period, subject, usedUsd: um / 1_000_000, usedTokens: ut, resetsAtMs: c.endsAtMs,
    ...(lm >= 0 ? { limitUsd: lm / 1_000_000 } : {}), ...(lt >= 0 ? { limitTokens: lt } : {}),
  };
}
