/**
 * The budget counters in Redis: reserve a call's worst case against every level in one script
 * call, settle it with the provider's usage in one more, read what is left. A level used up leaves
 * a small marker until its period ends, which the script announces: the gateway's early answer
 * reads its copy of the markers (markers.ts), not Redis.
 * Keys: `budgetKeys` (one hash tag).
 */
import { BUDGET_LEVELS, BUDGET_PERIODS, periodWindow, type BudgetBreach, type BudgetLevel, type BudgetPeriod, type BudgetSettings, type CounterState, type LevelLimits, type PeriodWindow } from '../core/budget.js';
import { StoredFormatError } from '../errors.js';

export type { CounterState } from '../core/budget.js';
import type { RedisClient } from '../redis/client.js';
import { budgetKeys } from '../redis/keys.js';
import { runScriptWithOptions } from '../redis/scripts.js';
import { readMarkers, type MarkerReader } from './markers.js';

/** A month's counters are kept this long after it ends. */
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

/** A limit reached, or brought to the notice share, by a settled call (or found without room for a call's worst case). */
export interface BudgetEvent extends BudgetBreach {
  kind: 'near' | 'exhausted';
  subject: string;
  /** What was used, in the limit's unit. */
  used: number;
}

/** Options of {@link createBudgetLedger}. */
export interface BudgetLedgerOptions {
  keyPrefix: string;
  settings: BudgetSettings;
  /** Lease of a reservation, ms: a worker dead between reserve and settle frees it within a minute after. Default {@link DEFAULT_RESERVATION_LEASE_MS}. */
  reservationLeaseMs?: number;
  /** Clock (epoch ms); injected by tests. Default `Date.now`. */
  now?: () => number;
  /** Where `check` reads the exhaustion markers: a gateway's copy (`watchBudgetMarkers`). Default: one MGET each time. */
  markers?: MarkerReader;
}

/** The budget counters of one deployment. */
export interface BudgetLedger {
  /**
   * Reserves `need` against every level of `scope` with a limit in force, if used + reserved + `need`
   * fits in each. @returns a reservation id (opaque), or the limit that holds (with `event` when this
   * refusal is the first word that it is used up, or has no room for `need` even with no call in flight).
   */
  reserve(scope: BudgetScope, need: CallNeed): Promise<{ id: string } | { breach: BudgetBreach; event?: BudgetEvent }>;
  /** Settles reservation `id` with the call's real cost; @returns the limits it brought to notice or used up. */
  settle(scope: BudgetScope, id: string, used: CallNeed): Promise<BudgetEvent[]>;
  /** The limit used up for `scope`, if any, from the exhaustion markers (`options.markers`): the gateway's early answer. */
  check(scope: BudgetScope): Promise<BudgetBreach | null>;
  /** Every counter of `scope` with its limits. */
  state(scope: BudgetScope): Promise<CounterState[]>;
  /** The counters of one level and subject (day, month), for `chatgate budgets list`. */
  stateOf(level: BudgetLevel, subject: string): Promise<CounterState[]>;
  /** Zeroes what `subject` used this day and month at `level` (reservations in flight stay) and drops its marker. */
  resetUsage(level: BudgetLevel, subject: string): Promise<void>;
  /**
   * Stores `subject`'s override at `level` (its JSON, or null to remove it) and drops its exhaustion
   * marker (the next call decides). @returns whether an override was removed.
   */
  setOverride(level: BudgetLevel, subject: string, stored: string | null): Promise<boolean>;
}

/** One counter as the script takes it. */
interface CounterSpec {
  level: BudgetLevel;
  period: BudgetPeriod;
  subject: string;
  field: string;
  override: string;
  /** The KEYS index of its level's exhaustion marker (3..5). */
  marker: number;
  endsAtMs: number;
  limitMicro: number;
  limitTokens: number;
  src?: 'override' | 'config';
}

/** What a reservation holds, carried in its id: the month's key, the minute its lease ends, the amounts and counters. */
interface Reservation {
  key: string;
  bucket: number;
  needMicro: number;
  needTokens: number;
  counters: CounterSpec[];
}

interface ScriptReply {
  ok?: boolean;
  first?: boolean;
  i?: number;
  unit?: 'usd' | 'tokens';
  limit?: number;
  used?: number;
  bucket?: number;
  limits?: Array<[number, number, number, 'override' | 'config']>;
  state?: number[][];
  removed?: number;
  events?: Array<{ i: number; kind: 'near' | 'exhausted'; unit: 'usd' | 'tokens'; limit: number; used: number }>;
}

const MARKER_INDEX: Readonly<Record<BudgetLevel, number>> = { user: 3, chat: 4, deployment: 5 };

/** Creates the ledger over `redis` (any connection; on a Cluster every key is on the `{budget}` slot). */
export function createBudgetLedger(redis: RedisClient, options: BudgetLedgerOptions): BudgetLedger {
  const keys = budgetKeys(options.keyPrefix);
  const now = options.now ?? Date.now;
  const leaseMs = options.reservationLeaseMs ?? DEFAULT_RESERVATION_LEASE_MS;
  const settings = options.settings;
  const markers = options.markers ?? readMarkers(redis);
  const windows = createWindowCache(settings.timeZone);
  const markerKeys = (scope: BudgetScope) => BUDGET_LEVELS.map((level) => keys.exhausted(level, subjectAt(scope, level) ?? '-'));
  const run = async (op: string, key: string, scope: BudgetScope, counters: CounterSpec[], extra: object, nowMs: number): Promise<ScriptReply> => {
    const month = windows.of('month', nowMs);
    const args = { op, now: nowMs, expireAt: Math.ceil(month.endsAtMs / 1000) + KEEP_AFTER_PERIOD_S, counters, ...extra };
    return JSON.parse(String(await runScriptWithOptions(redis, 'budget', [keys.limits, key, ...markerKeys(scope)], args))) as ScriptReply;
  };
  const specsAt = (scope: BudgetScope, nowMs: number, levels: readonly BudgetLevel[] = BUDGET_LEVELS) => ({
    key: keys.counters(windows.of('month', nowMs).id),
    counters: levels.flatMap((level) => {
      const subject = subjectAt(scope, level);
      return subject === undefined ? [] : BUDGET_PERIODS.map((period) => counterSpec(settings, level, subject, period, windows.of(period, nowMs)));
    }),
  });
  const stateOf = async (scope: BudgetScope, levels?: readonly BudgetLevel[]) => {
    const nowMs = now();
    const { key, counters } = specsAt(scope, nowMs, levels);
    const reply = await run('state', key, scope, counters, {}, nowMs);
    return counters.map((c, k) => toState(c, listOf(reply.state)[k] ?? [0, 0, 0, 0, -1, -1, 0]));
  };
  return {
    async reserve(scope, need) {
      const nowMs = now();
      const { key, counters } = specsAt(scope, nowMs);
      const reply = await run('reserve', key, scope, counters, { needMicro: need.micro ?? -1, needTokens: need.tokens, leaseMs }, nowMs);
      if (reply.ok) {
        const held = listOf(reply.limits).map(([i, limitMicro, limitTokens, src]) => ({ ...counters[i - 1]!, limitMicro, limitTokens, src }));
        const reservation: Reservation = { key, bucket: reply.bucket!, needMicro: Math.max(need.micro ?? 0, 0), needTokens: need.tokens, counters: held };
        return { id: JSON.stringify(reservation) };
      }
      const counter = counters[reply.i! - 1]!;
      const breach = toBreach(counter, reply.unit!, reply.limit!, reply.used!);
      return reply.first ? { breach, event: { ...breach, used: breach.used!, kind: 'exhausted', subject: counter.subject } } : { breach };
    },
    async settle(scope, id, used) {
      const r = JSON.parse(id) as Reservation;
      const args = { bucket: r.bucket, needMicro: r.needMicro, needTokens: r.needTokens, micro: used.micro ?? 0, tokens: used.tokens, unpriced: used.micro === undefined, noticePercent: settings.noticePercent };
      const reply = await run('settle', r.key, scope, r.counters, args, now());
      return listOf(reply.events).map((e) => {
        const breach = toBreach(r.counters[e.i - 1]!, e.unit, e.limit, e.used);
        return { ...breach, used: breach.used!, kind: e.kind, subject: r.counters[e.i - 1]!.subject };
      });
    },
    async check(scope) {
      const raw = await markers.read(markerKeys(scope));
      const nowMs = now();
      for (const [k, level] of BUDGET_LEVELS.entries()) {
        const subject = subjectAt(scope, level);
        const breach = subject === undefined || raw[k] == null ? null : markerBreach(settings, level, subject, raw[k]!, nowMs);
        if (breach) return breach;
      }
      return null;
    },
    state: (scope) => stateOf(scope),
    stateOf: (level, subject) => stateOf(scopeOf(level, subject), [level]),
    async resetUsage(level, subject) {
      const nowMs = now();
      const scope = scopeOf(level, subject);
      const { key, counters } = specsAt(scope, nowMs, [level]);
      await run('reset', key, scope, counters, {}, nowMs);
      // Dropped and announced together: a gateway's copy (markers.ts) never keeps a dropped marker.
      const marker = keys.exhausted(level, subject);
      await redis.multi().del(marker).publish(keys.markerChannel, JSON.stringify({ key: marker })).exec();
    },
    async setOverride(level, subject, stored) {
      const nowMs = now();
      const reply = await run('override', keys.counters(windows.of('month', nowMs).id), scopeOf(level, subject), [], { override: `${level}:${subject}`, marker: MARKER_INDEX[level], ...(stored === null ? {} : { value: stored }) }, nowMs);
      return reply.removed === 1;
    },
  };
}

/** The configured limits of a level for `subject` (a budgets-file entry replaces the user level's); a stored override wins over these. */
export function configuredLimits(settings: BudgetSettings, level: BudgetLevel, subject: string): LevelLimits {
  if (level !== 'user') return settings[level];
  const own = settings.users[subject];
  return own === 'unlimited' ? {} : own ?? settings.user;
}

function subjectAt(scope: BudgetScope, level: BudgetLevel): string | undefined {
  return level === 'user' ? scope.user : level === 'chat' ? scope.chat : DEPLOYMENT_SUBJECT;
}

function scopeOf(level: BudgetLevel, subject: string): BudgetScope {
  return level === 'user' ? { user: subject } : level === 'chat' ? { chat: subject } : {};
}

function counterSpec(settings: BudgetSettings, level: BudgetLevel, subject: string, period: BudgetPeriod, window: PeriodWindow): CounterSpec {
  const limits = configuredLimits(settings, level, subject)[period];
  return {
    level, period, subject, field: `${level}:${subject}:${window.id}`, override: `${level}:${subject}`, marker: MARKER_INDEX[level], endsAtMs: window.endsAtMs,
    limitMicro: limits?.usd === undefined ? -1 : Math.round(limits.usd * 1_000_000),
    limitTokens: limits?.tokens ?? -1,
  };
}

/**
 * The period windows of one time zone, each computed once and reused until it ends (the
 * time-zone arithmetic is the costly part of a call's budget work).
 */
function createWindowCache(timeZone: string): { of(period: BudgetPeriod, nowMs: number): PeriodWindow } {
  const cached = new Map<BudgetPeriod, { window: PeriodWindow; fromMs: number }>();
  return {
    of(period, nowMs) {
      const hit = cached.get(period);
      if (hit && nowMs >= hit.fromMs && nowMs < hit.window.endsAtMs) return hit.window;
      const window = periodWindow(period, nowMs, timeZone);
      cached.set(period, { window, fromMs: nowMs });
      return window;
    },
  };
}

/** An exhaustion marker read back: the breach, or null when its period ended or the configured limit it was set at changed. */
function markerBreach(settings: BudgetSettings, level: BudgetLevel, subject: string, raw: string, nowMs: number): BudgetBreach | null {
  const m = parseMarker(raw);
  if (m === null || m.v !== 1) throw new StoredFormatError(`budget marker ${level}:${subject}`, m?.v, 1, 'it goes when its period ends; `chatgate budgets reset` drops it now');
  if (m.resetsAtMs <= nowMs) return null;
  if (m.src === 'config') {
    const limit = configuredLimits(settings, level, subject)[m.period];
    const configured = m.unit === 'usd' ? (limit?.usd === undefined ? -1 : Math.round(limit.usd * 1_000_000)) : limit?.tokens ?? -1;
    if (configured !== m.limit) return null;
  }
  const scale = m.unit === 'usd' ? 1_000_000 : 1;
  return { level, period: m.period, unit: m.unit, limit: m.limit / scale, ...(typeof m.used === 'number' ? { used: m.used / scale } : {}), resetsAtMs: m.resetsAtMs };
}

interface Marker {
  v: unknown;
  period: BudgetPeriod;
  unit: 'usd' | 'tokens';
  limit: number;
  /** Absent in markers written before it was kept. */
  used?: number;
  resetsAtMs: number;
  src: 'override' | 'config';
}

function parseMarker(raw: string): Marker | null {
  try {
    const m = JSON.parse(raw) as Marker | null;
    return typeof m === 'object' ? m : null;
  } catch {
    return null;
  }
}

/** A JSON array from Lua (cjson writes an empty table as `{}`). */
function listOf<T>(value: T[] | undefined): T[] {
  return Array.isArray(value) ? value : [];
}

function toBreach(c: CounterSpec, unit: 'usd' | 'tokens', limit: number, used: number): BudgetBreach {
  const scale = unit === 'usd' ? 1_000_000 : 1;
  return { level: c.level, period: c.period, unit, limit: limit / scale, used: used / scale, resetsAtMs: c.endsAtMs };
}

function toState(c: CounterSpec, s: number[]): CounterState {
  const [um = 0, ut = 0, , , lm = -1, lt = -1, uu = 0] = s;
  return {
    level: c.level, period: c.period, subject: c.subject, usedUsd: um / 1_000_000, usedTokens: ut, resetsAtMs: c.endsAtMs, ...(uu > 0 ? { unpricedTokens: uu } : {}),
    ...(lm >= 0 ? { limitUsd: lm / 1_000_000 } : {}), ...(lt >= 0 ? { limitTokens: lt } : {}),
  };
}
