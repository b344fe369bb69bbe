/**
 * The budget counters in Redis: reserve a call's worst case against every level in one script,
 * settle it with the provider's usage, read what is left. Keys: `budgetKeys` (one hash tag).
 */
import { randomUUID } from 'node:crypto';
import { BUDGET_LEVELS, BUDGET_PERIODS, periodWindow, type BudgetBreach, type BudgetLevel, type BudgetPeriod, type BudgetSettings, type LevelLimits } from '../core/budget.js';
import type { RedisClient } from '../redis/client.js';
import { budgetKeys } from '../redis/keys.js';
import { runScriptWithOptions } from '../redis/scripts.js';

/** Counters are kept this long after their period ends (what `/usage` and the CLI show of the last one). */
const KEEP_AFTER_PERIOD_S = 35 * 86_400;

/** Default lease of a reservation: a worker dead between reserve and settle frees it after this. */
export const DEFAULT_RESERVATION_LEASE_MS = 15 * 60_000;

/** Whom a call counts for: the user (`<channel>:<userId>`) and the chat (session id). */
export interface BudgetScope {
  user: string;
  chat: string;
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

/** One counter as `/usage` and `chatgate budgets` show it. */
export interface CounterState {
  level: BudgetLevel;
  period: BudgetPeriod;
  subject: string;
  usedUsd: number;
  usedTokens: number;
  /** Limits in force (stored override, else configured); undefined: none. */
  limitUsd?: number;
  limitTokens?: number;
  resetsAtMs: number;
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
  /** Reserves `need` against every level of `scope`. @returns a reservation id, or the limit that holds. */
  reserve(scope: BudgetScope, need: CallNeed): Promise<{ id: string } | { breach: BudgetBreach }>;
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
  subject: string;
  key: string;
  endsAtMs: number;
  arg: { field: string; period: BudgetPeriod; limitMicro: number; limitTokens: number; expireAt: number };
}

/** Creates the ledger over `redis` (any connection; on a Cluster every key is on the `{budget}` slot). */
export function createBudgetLedger(redis: RedisClient, options: BudgetLedgerOptions): BudgetLedger {
  const keys = budgetKeys(options.keyPrefix);
  const now = options.now ?? Date.now;
  const leaseMs = options.reservationLeaseMs ?? DEFAULT_RESERVATION_LEASE_MS;
  const specs = (scope: BudgetScope, nowMs: number) => counterSpecs(scope, nowMs, options.settings, keys.counter);
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
      return reply.ok ? { id } : { breach: toBreach(counters[reply.i! - 1]!, reply.unit!, reply.limit!) };
    },
    async settle(scope, id, used) {
      const counters = specs(scope, now());
      const args = { id, micro: used.micro ?? 0, tokens: used.tokens, noticePercent: options.settings.noticePercent, counters: counters.map((c) => c.arg) };
      const reply = JSON.parse(String(await runScriptWithOptions(redis, 'budgetSettle', scriptKeys(counters), args))) as { events: Array<{ i: number; kind: 'near' | 'exhausted'; unit: 'usd' | 'tokens'; limit: number }> };
      return (Array.isArray(reply.events) ? reply.events : []).map((e) => ({ ...toBreach(counters[e.i - 1]!, e.unit, e.limit), kind: e.kind, subject: counters[e.i - 1]!.subject }));
    },
    async check(scope) {
      const { reply, counters } = await run(scope, { needMicro: 0, needTokens: 0 }, true);
      return reply.ok ? null : toBreach(counters[reply.i! - 1]!, reply.unit!, reply.limit!);
    },
    async state(scope) {
      const { reply, counters } = await run(scope, { needMicro: -1, needTokens: -1 }, true);
      return counters.map((c, k) => toState(c, reply.state?.[k] ?? [0, 0, 0, 0, -1, -1]));
    },
  };
}

interface ReserveReply {
  ok: boolean;
  i?: number;
  unit?: 'usd' | 'tokens';
  limit?: number;
  state?: number[][];
}

/** The six counters of a scope (user, chat, deployment × day, month), in the scripts' order. */
function counterSpecs(scope: BudgetScope, nowMs: number, settings: BudgetSettings, counterKey: (level: string, subject: string, periodId: string) => string): CounterSpec[] {
  return BUDGET_LEVELS.flatMap((level) => BUDGET_PERIODS.map((period): CounterSpec => {
    const subject = level === 'user' ? scope.user : level === 'chat' ? scope.chat : 'all';
    const window = periodWindow(period, nowMs, settings.timeZone);
    const limits = limitsOf(settings, level, subject)[period];
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

/** The configured limits of a level (a budgets-file entry replaces the user level's). */
function limitsOf(settings: BudgetSettings, level: BudgetLevel, subject: string): LevelLimits {
  if (level !== 'user') return settings[level];
  const own = settings.users[subject];
  return own === 'unlimited' ? {} : own ?? settings.user;
}

function toBreach(c: CounterSpec, unit: 'usd' | 'tokens', limit: number): BudgetBreach {
  return { level: c.level, period: c.period, unit, limit: unit === 'usd' ? limit / 1_000_000 : limit, resetsAtMs: c.endsAtMs };
}

function toState(c: CounterSpec, s: number[]): CounterState {
  const [um = 0, ut = 0, , , lm = -1, lt = -1] = s;
  return {
    level: c.level, period: c.period, subject: c.subject, usedUsd: um / 1_000_000, usedTokens: ut, resetsAtMs: c.endsAtMs,
    ...(lm >= 0 ? { limitUsd: lm / 1_000_000 } : {}), ...(lt >= 0 ? { limitTokens: lt } : {}),
  };
}
