/**
 * The budget counters in Redis: reserve a call's worst case against every level in one script
 * call, settle it with the provider's usage in one more, read what is left. A level used up leaves
 * a small marker until its period ends, which the script announces: the gateway's early answer
 * reads its copy of the markers (markers.ts), not Redis.
 * Keys: `budgetKeys` (one hash tag).
 */
import { BUDGET_LEVELS, periodWindow, type BudgetBreach, type BudgetLevel, type BudgetPeriod, type BudgetSettings, type CounterState, type LevelLimits, type PeriodWindow } from '../core/budget.js';
export type { CounterState } from '../core/budget.js';
import type { RedisClient } from '../redis/client.js';
import { budgetKeys } from '../redis/keys.js';
import { runScript } from '../redis/scripts.js';
import { readMarkers, type MarkerReader } from './markers.js';

/** The format version of an exhaustion marker (its `v`), as the budget script writes it. */
const MARKER_FORMAT = 1;

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

/** A reservation, as `reserve` hands it to `settle` (opaque). */
export interface ReservationId {
  readonly [reservationBrand]: true;
}
declare const reservationBrand: unique symbol;

/** One subject of the script's counters, at one level. */
export interface BudgetSubject {
  level: BudgetLevel;
  subject: string;
}

/**
 * An exhaustion marker this chatgate cannot read (another format version, or not JSON). It holds
 * nothing: the gateway lets messages through and the worker's reserve decides from the counters.
 */
export interface UnreadableMarker {
  /** What an operator reads, e.g. "marker unreadable (format 9): it blocks nothing …; `chatgate budgets reset user web:42` drops it now …". */
  unreadable: string;
  /** Its format version as stored (absent: none, or not JSON). */
  format?: unknown;
}

/** What a subject's exhaustion marker says: the limit that holds, a marker this version cannot read, or null (none, or it no longer holds). */
export type MarkerState = BudgetBreach | UnreadableMarker | null;

/** The most subjects one `statesOf` script call reads (more go in several calls). */
export const STATES_PER_CALL = 200;

/** The budget counters of one deployment. */
export interface BudgetLedger {
  /**
   * Reserves `need` against every level of `scope` with a limit in force, if used + reserved + `need`
   * fits in each. @returns a reservation id (opaque), or the limit that holds (with `event` when this
   * refusal is the first word that it is used up, or has no room for `need` even with no call in flight;
   * `inFlight` when only the same subject's calls in flight leave no room).
   */
  reserve(scope: BudgetScope, need: CallNeed): Promise<{ id: ReservationId } | { breach: BudgetBreach; event?: BudgetEvent }>;
  /** Settles reservation `id` with the call's real cost; @returns the limits it brought to notice or used up. */
  settle(scope: BudgetScope, id: ReservationId, used: CallNeed): Promise<BudgetEvent[]>;
  /**
   * The limit used up for `scope`, from the exhaustion markers (`options.markers`): the gateway's
   * early answer. Else the first marker of `scope` this version cannot read (it holds nothing), else null.
   */
  check(scope: BudgetScope): Promise<BudgetBreach | UnreadableMarker | null>;
  /** Every counter of `scope` with its limits. */
  state(scope: BudgetScope): Promise<CounterState[]>;
  /** The counters (day, month) of each of `subjects`, in order: one script call a {@link STATES_PER_CALL}. */
  statesOf(subjects: readonly BudgetSubject[]): Promise<CounterState[][]>;
  /**
   * What the exhaustion marker of each of `subjects` says, in order: one marker read a {@link STATES_PER_CALL}.
   * A marker this version cannot read is named ({@link UnreadableMarker}), never thrown: the others still read.
   */
  blockedOf(subjects: readonly BudgetSubject[]): Promise<MarkerState[]>;
  /** Zeroes what `subject` used this day and month at `level` (reservations in flight stay) and drops its marker. */
  resetUsage(level: BudgetLevel, subject: string): Promise<void>;
  /**
   * Stores `subject`'s override at `level` (its JSON, or null to remove it), drops its exhaustion
   * marker (the next call decides) and clears the notices said on its day and month counters (they
   * may come again under the new limits). @returns whether an override was removed.
   */
  setOverride(level: BudgetLevel, subject: string, stored: string | null): Promise<boolean>;
}

/** A subject as the script takes it, kept per process (its configured limits do not change). */
interface SubjectSpec {
  level: BudgetLevel;
  subject: string;
  /** `<level>:<subject>`: its field in the limits hash, and its counters' fields' start. */
  override: string;
  /** The KEYS index of its level's exhaustion marker (3..5). */
  marker: number;
  markerKey: string;
  /** Configured micro-USD and tokens of the day, then of the month (-1: none). */
  dayMicro: number;
  dayTokens: number;
  monthMicro: number;
  monthTokens: number;
}

/** What a reservation holds: the keys, the minute its lease ends, the amounts and the reserve's reply (the counters held and their limits). */
interface Reservation {
  keys: string[];
  bucket: number;
  needMicro: number;
  needTokens: number;
  specs: SubjectSpec[];
  day: PeriodWindow;
  month: PeriodWindow;
  /** `[1, bucket, then limit micro, limit tokens, src (1 override) a counter]`: counter i is subject ⌈i/2⌉'s day (odd) or month. */
  reply: number[];
}

const MARKER_INDEX: Readonly<Record<BudgetLevel, number>> = { user: 3, chat: 4, deployment: 5 };
const UNITS = ['usd', 'tokens'] as const;
/** Past this many subjects the per-process cache of subjects starts again. */
const SUBJECT_CACHE_MAX = 10_000;

/** Creates the ledger over `redis` (any connection; on a Cluster every key is on the `{budget}` slot). */
export function createBudgetLedger(redis: RedisClient, options: BudgetLedgerOptions): BudgetLedger {
  const keys = budgetKeys(options.keyPrefix);
  const now = options.now ?? Date.now;
  const leaseMs = options.reservationLeaseMs ?? DEFAULT_RESERVATION_LEASE_MS;
  const settings = options.settings;
  const markers = options.markers ?? readMarkers(redis);
  const windows = createWindowCache(settings.timeZone);
  const noMarker = BUDGET_LEVELS.map((level) => keys.exhausted(level, '-'));
  const subjects = new Map<BudgetLevel, Map<string, SubjectSpec>>(BUDGET_LEVELS.map((level) => [level, new Map()]));
  let cached = 0;
  const specOf = (level: BudgetLevel, subject: string): SubjectSpec => {
    const byLevel = subjects.get(level)!;
    let spec = byLevel.get(subject);
    if (spec) return spec;
    if (++cached > SUBJECT_CACHE_MAX) {
      for (const m of subjects.values()) m.clear();
      cached = 1;
    }
    const limits = configuredLimits(settings, level, subject);
    spec = {
      level, subject, override: `${level}:${subject}`, marker: MARKER_INDEX[level], markerKey: keys.exhausted(level, subject),
      dayMicro: microOf(limits.day?.usd), dayTokens: limits.day?.tokens ?? -1, monthMicro: microOf(limits.month?.usd), monthTokens: limits.month?.tokens ?? -1,
    };
    byLevel.set(subject, spec);
    return spec;
  };
  let monthKey = { id: '', key: '' };
  const countersKey = (month: PeriodWindow) => {
    if (monthKey.id !== month.id) monthKey = { id: month.id, key: keys.counters(month.id) };
    return monthKey.key;
  };
  const expireAt = (month: PeriodWindow) => Math.ceil(month.endsAtMs / 1000) + KEEP_AFTER_PERIOD_S;
  /** The specs of `scope`'s levels with a subject, and the script's keys. */
  const scopeSpecs = (scope: BudgetScope, month: PeriodWindow, levels: readonly BudgetLevel[] = BUDGET_LEVELS) => {
    const specs: SubjectSpec[] = [];
    const scriptKeys = [keys.limits, countersKey(month), noMarker[0]!, noMarker[1]!, noMarker[2]!];
    for (const level of levels) {
      const subject = subjectAt(scope, level);
      if (subject === undefined) continue;
      const spec = specOf(level, subject);
      specs.push(spec);
      scriptKeys[spec.marker - 1] = spec.markerKey;
    }
    return { specs, scriptKeys };
  };
  /** Reserve, state and reset: their positional arguments. */
  const counterArgs = (op: string, nowMs: number, day: PeriodWindow, month: PeriodWindow, specs: readonly SubjectSpec[], needMicro = 0, needTokens = 0, lease = 0) => {
    const args: Array<string | number> = [op, nowMs, expireAt(month), day.id, day.endsAtMs, month.id, month.endsAtMs, needMicro, needTokens, lease];
    for (const s of specs) args.push(s.marker, s.override, s.dayMicro, s.dayTokens, s.monthMicro, s.monthTokens);
    return args;
  };
  const run = async (scriptKeys: readonly string[], args: ReadonlyArray<string | number>): Promise<number[]> => (await runScript(redis, 'budget', scriptKeys, args)) as number[];
  const statesOf = async (list: readonly BudgetSubject[]): Promise<CounterState[][]> => {
    const nowMs = now();
    const [day, month] = [windows.of('day', nowMs), windows.of('month', nowMs)];
    const out: CounterState[][] = [];
    for (let from = 0; from < list.length; from += STATES_PER_CALL) {
      const specs = list.slice(from, from + STATES_PER_CALL).map((s) => specOf(s.level, s.subject));
      const reply = await run([keys.limits, countersKey(month), ...noMarker], counterArgs('state', nowMs, day, month, specs));
      specs.forEach((spec, k) => out.push([toState(spec, 'day', day, reply, 14 * k), toState(spec, 'month', month, reply, 14 * k + 7)]));
    }
    return out;
  };
  const blockedOf = async (list: readonly BudgetSubject[]): Promise<MarkerState[]> => {
    const out: MarkerState[] = [];
    for (let from = 0; from < list.length; from += STATES_PER_CALL) {
      const part = list.slice(from, from + STATES_PER_CALL);
      const raw = await markers.read(part.map((s) => specOf(s.level, s.subject).markerKey));
      const nowMs = now();
      part.forEach((s, k) => out.push(raw[k] == null ? null : markerBreach(settings, s.level, s.subject, raw[k]!, nowMs)));
    }
    return out;
  };
  return {
    async reserve(scope, need) {
      const nowMs = now();
      const day = windows.of('day', nowMs);
      const month = windows.of('month', nowMs);
      const { specs, scriptKeys } = scopeSpecs(scope, month);
      const needMicro = need.micro ?? -1;
      const reply = await run(scriptKeys, counterArgs('reserve', nowMs, day, month, specs, needMicro, need.tokens, leaseMs));
      if (reply[0] === 1) {
        const reservation: Reservation = { keys: scriptKeys, bucket: reply[1]!, needMicro: Math.max(needMicro, 0), needTokens: need.tokens, specs, day, month, reply };
        return { id: reservation as unknown as ReservationId };
      }
      const [, i = 1, unit = 1, limit = 0, used = 0, first, inFlight] = reply;
      const spec = specs[(i - 1) >> 1]!;
      const breach = toBreach(spec, i % 2 === 1 ? day : month, i % 2 === 1 ? 'day' : 'month', UNITS[unit - 1]!, limit, used);
      if (inFlight === 1) breach.inFlight = true;
      return first === 1 ? { breach, event: { ...breach, used: breach.used!, kind: 'exhausted', subject: spec.subject } } : { breach };
    },
    async settle(_scope, id, used) {
      const r = id as unknown as Reservation;
      const args: Array<string | number> = ['settle', now(), expireAt(r.month), r.bucket, r.needMicro, r.needTokens, used.micro ?? 0, used.tokens, used.micro === undefined ? 1 : 0, settings.noticePercent, r.day.id, r.day.endsAtMs, r.month.id, r.month.endsAtMs];
      const limits = r.reply;
      for (const [s, spec] of r.specs.entries()) {
        const at = 2 + 6 * s;
        args.push(spec.marker, spec.override, limits[at]!, limits[at + 1]!, limits[at + 2]!, limits[at + 3]!, limits[at + 4]!, limits[at + 5]!);
      }
      const reply = await run(r.keys, args);
      const events: BudgetEvent[] = [];
      for (let e = 0; e < reply.length; e += 5) {
        const i = reply[e]!;
        const spec = r.specs[(i - 1) >> 1]!;
        const isDay = i % 2 === 1;
        const breach = toBreach(spec, isDay ? r.day : r.month, isDay ? 'day' : 'month', UNITS[reply[e + 2]! - 1]!, reply[e + 3]!, reply[e + 4]!);
        events.push({ ...breach, used: breach.used!, kind: reply[e + 1] === 2 ? 'exhausted' : 'near', subject: spec.subject });
      }
      return events;
    },
    async check(scope) {
      // The user's marker first, then the chat's, then the deployment's; one that holds before one unreadable.
      const found = await blockedOf(subjectsIn(scope));
      return found.find((m) => m !== null && !isUnreadableMarker(m)) ?? found.find((m) => m !== null) ?? null;
    },
    state: async (scope) => (await statesOf(subjectsIn(scope))).flat(),
    statesOf,
    blockedOf,
    async resetUsage(level, subject) {
      const nowMs = now();
      const month = windows.of('month', nowMs);
      const { specs, scriptKeys } = scopeSpecs(scopeOf(level, subject), month, [level]);
      await run(scriptKeys, counterArgs('reset', nowMs, windows.of('day', nowMs), month, specs));
      // Dropped and announced together: a gateway's copy (markers.ts) never keeps a dropped marker.
      const marker = keys.exhausted(level, subject);
      await redis.multi().del(marker).publish(keys.markerChannel, JSON.stringify({ key: marker })).exec();
    },
    async setOverride(level, subject, stored) {
      const nowMs = now();
      const month = windows.of('month', nowMs);
      const { specs, scriptKeys } = scopeSpecs(scopeOf(level, subject), month, [level]);
      const spec = specs[0]!;
      const args: Array<string | number> = ['override', nowMs, expireAt(month), spec.override, spec.marker];
      if (stored !== null) args.push(stored);
      return (await runScript(redis, 'budget', scriptKeys, args)) === 1;
    },
  };
}

/** Whether `marker` (from `blockedOf` or `check`) is one this version cannot read. */
export function isUnreadableMarker(marker: MarkerState): marker is UnreadableMarker {
  return marker !== null && 'unreadable' in marker;
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

/** The levels of `scope` with a subject, in {@link BUDGET_LEVELS} order (user, chat, deployment). */
function subjectsIn(scope: BudgetScope): BudgetSubject[] {
  return BUDGET_LEVELS.flatMap((level) => {
    const subject = subjectAt(scope, level);
    return subject === undefined ? [] : [{ level, subject }];
  });
}

function scopeOf(level: BudgetLevel, subject: string): BudgetScope {
  return level === 'user' ? { user: subject } : level === 'chat' ? { chat: subject } : {};
}

/** USD as micro-USD (-1: no limit). */
function microOf(usd: number | undefined): number {
  return usd === undefined ? -1 : Math.round(usd * 1_000_000);
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

/**
 * An exhaustion marker read back: the breach, null when its period ended or the configured limit it
 * was set at changed, or named unreadable (another format version: no compatibility code, it expires).
 */
function markerBreach(settings: BudgetSettings, level: BudgetLevel, subject: string, raw: string, nowMs: number): MarkerState {
  const m = parseMarker(raw);
  if (m === null || m.v !== MARKER_FORMAT) return unreadableMarker(level, subject, m?.v);
  if (m.resetsAtMs <= nowMs) return null;
  if (m.src === 'config') {
    const limit = configuredLimits(settings, level, subject)[m.period];
    const configured = m.unit === 'usd' ? microOf(limit?.usd) : limit?.tokens ?? -1;
    if (configured !== m.limit) return null;
  }
  const scale = m.unit === 'usd' ? 1_000_000 : 1;
  return { level, period: m.period, unit: m.unit, limit: m.limit / scale, ...(typeof m.used === 'number' ? { used: m.used / scale } : {}), resetsAtMs: m.resetsAtMs };
}

/** What an unreadable marker of `subject` says to an operator: `budgets reset` drops it (the override script deletes the marker with the stored limits). */
function unreadableMarker(level: BudgetLevel, subject: string, format: unknown): UnreadableMarker {
  const who = level === 'deployment' ? 'deployment' : `${level} ${subject}`;
  const unreadable = `marker unreadable (format ${JSON.stringify(format) ?? 'none'}): it blocks nothing and goes when its period ends; \`chatgate budgets reset ${who}\` drops it now (and any limits stored for ${level === 'deployment' ? 'the deployment' : who})`;
  return format === undefined ? { unreadable } : { unreadable, format };
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

function toBreach(spec: SubjectSpec, window: PeriodWindow, period: BudgetPeriod, unit: 'usd' | 'tokens', limit: number, used: number): BudgetBreach {
  const scale = unit === 'usd' ? 1_000_000 : 1;
  return { level: spec.level, period, unit, limit: limit / scale, used: used / scale, resetsAtMs: window.endsAtMs };
}

/** Counter `at` of a state reply (7 numbers: um, ut, rm, rt, limit micro, limit tokens, uu). */
function toState(spec: SubjectSpec, period: BudgetPeriod, window: PeriodWindow, reply: readonly number[], at: number): CounterState {
  const [um = 0, ut = 0, lm = -1, lt = -1, uu = 0] = [reply[at], reply[at + 1], reply[at + 4], reply[at + 5], reply[at + 6]];
  return {
    level: spec.level, period, subject: spec.subject, usedUsd: um / 1_000_000, usedTokens: ut, resetsAtMs: window.endsAtMs, ...(uu > 0 ? { unpricedTokens: uu } : {}),
    ...(lm >= 0 ? { limitUsd: lm / 1_000_000 } : {}), ...(lt >= 0 ? { limitTokens: lt } : {}),
  };
}
