/**
 * Spend limits: the levels and periods a model call counts against, the period windows in a time
 * zone, the worst case of a call, and the words a user reads when a limit holds. Pure.
 */
import { formatMoney } from './money.js';
import { estimateCostUsd, type ModelPricing } from './models.js';
import { countOf } from './plural.js';

/** Who a limit is for: one user (`<channel>:<userId>`), one chat (a session) or the whole deployment. */
export type BudgetLevel = 'user' | 'chat' | 'deployment';
/** How long a limit's counter runs before it starts again at 0. */
export type BudgetPeriod = 'day' | 'month';

/** One limit; an absent field is no limit. */
export interface BudgetLimit {
  usd?: number;
  tokens?: number;
}

/** The limits of one level, by period. */
export interface LevelLimits {
  day?: BudgetLimit;
  month?: BudgetLimit;
}

/** The budget configuration (environment and budgets file). */
export interface BudgetSettings {
  user: LevelLimits;
  chat: LevelLimits;
  deployment: LevelLimits;
  /** Caps of one turn (all its model calls together), against loops. */
  turn: BudgetLimit;
  /** IANA time zone where days and months start. Default `UTC`. */
  timeZone: string;
  /** Percent of a limit at which the user is told once. Default 80. */
  noticePercent: number;
  /** Budgets file: per-user limits (`telegram:42`) replacing the user level's, or `unlimited`. */
  users: Readonly<Record<string, LevelLimits | 'unlimited'>>;
  /** `CHATGATE_ALERT_WEBHOOK_URL`: where near-limit and exhausted events are POSTed. Absent: logged and counted only. */
  alertWebhookUrl?: string;
}

/**
 * Whom a model call counts for, passed with the call (a completion request, a summary request, a
 * transcription) by the code that knows it: the user (`<channel>:<userId>`; absent when no user
 * asked, as for `chatgate compact`) and the chat (the session id). A call with none counts for the
 * deployment alone. Inside a turn, `turn` carries what the turn's calls spent so far (the per-turn
 * caps) and where the user's notices go (a limit at the notice share).
 */
export interface CallScope {
  user?: string;
  chat?: string;
  turn?: TurnSpend;
}

/** What one turn's model calls have spent, counted by the budget wrapper for the per-turn caps. */
export interface TurnSpend {
  usedMicro: number;
  usedTokens: number;
  onNotice: (text: string) => void;
  /** The settle of the turn's last call, in flight: awaited before its next call and before it commits (never rejects). */
  settling?: Promise<void>;
}

/** The levels, in the order counters are kept and reported. */
export const BUDGET_LEVELS: readonly BudgetLevel[] = ['user', 'chat', 'deployment'];
/** The periods, in the order counters are kept. */
export const BUDGET_PERIODS: readonly BudgetPeriod[] = ['day', 'month'];

/** One period's window: its id (`2026-12-02`, `2026-12`) and when it ends (epoch ms). */
export interface PeriodWindow {
  id: string;
  endsAtMs: number;
}

/** A level's limits in the flat form of the budgets file, stored overrides and `chatgate budgets` (`dailyUsd`, …). */
export interface FlatLimits {
  dailyUsd?: number;
  monthlyUsd?: number;
  dailyTokens?: number;
  monthlyTokens?: number;
}

/** The names of {@link FlatLimits}' fields. */
export const FLAT_LIMIT_FIELDS: readonly (keyof FlatLimits)[] = ['dailyUsd', 'monthlyUsd', 'dailyTokens', 'monthlyTokens'];

/** `limits` in the flat form (absent limits left out). */
export function toFlatLimits(limits: LevelLimits): FlatLimits {
  const flat: FlatLimits = { dailyUsd: limits.day?.usd, monthlyUsd: limits.month?.usd, dailyTokens: limits.day?.tokens, monthlyTokens: limits.month?.tokens };
  return Object.fromEntries(Object.entries(flat).filter(([, n]) => n !== undefined)) as FlatLimits;
}

/** Flat limits as a level's limits by period (an undefined field is no limit). */
export function fromFlatLimits(flat: FlatLimits): LevelLimits {
  const limit = (usd?: number, tokens?: number): BudgetLimit | undefined =>
    (usd === undefined && tokens === undefined ? undefined : { ...(usd !== undefined ? { usd } : {}), ...(tokens !== undefined ? { tokens } : {}) });
  const day = limit(flat.dailyUsd, flat.dailyTokens);
  const month = limit(flat.monthlyUsd, flat.monthlyTokens);
  return { ...(day ? { day } : {}), ...(month ? { month } : {}) };
}

/** Budgets off: no limit at any level. */
export const NO_BUDGETS: BudgetSettings = Object.freeze({ user: {}, chat: {}, deployment: {}, turn: {}, timeZone: 'UTC', noticePercent: 80, users: {} });

/** Whether any limit is set (else the budget machinery stays out of the way). */
export function hasBudgets(settings: BudgetSettings): boolean {
  const set = (l?: BudgetLimit) => l !== undefined && (l.usd !== undefined || l.tokens !== undefined);
  const level = (l: LevelLimits) => set(l.day) || set(l.month);
  return level(settings.user) || level(settings.chat) || level(settings.deployment) || set(settings.turn) || Object.keys(settings.users).length > 0;
}

/** The window of `period` that holds `nowMs` in `timeZone`. */
export function periodWindow(period: BudgetPeriod, nowMs: number, timeZone: string): PeriodWindow {
  const utc = timeZone === 'UTC';
  const now = new Date(nowMs);
  const { year, month, day } = utc ? { year: now.getUTCFullYear(), month: now.getUTCMonth() + 1, day: now.getUTCDate() } : localDate(nowMs, timeZone);
  const id = period === 'day' ? `${year}-${pad(month)}-${pad(day)}` : `${year}-${pad(month)}`;
  const next = period === 'day' ? Date.UTC(year, month - 1, day + 1) : Date.UTC(year, month, 1);
  return { id, endsAtMs: utc ? next : localMidnightToUtc(next, timeZone) };
}

/** Worst-case cost of a call in micro-USD (prompt as counted + the output limit); undefined when unpriced. */
export function worstCaseMicroUsd(pricing: ModelPricing | undefined, promptTokens: number, maxOutputTokens: number): number | undefined {
  if (!pricing) return undefined;
  return Math.ceil(estimateCostUsd(pricing, { promptTokens, completionTokens: maxOutputTokens }) * 1_000_000);
}

/** A limit no call fits in: even an answer with an empty prompt needs more (`need`, in the limit's unit). */
export interface LimitBelowOneCall {
  what: string;
  limit: number;
  need: number;
  unit: 'usd' | 'tokens';
}

/**
 * The configured limits smaller than one call's worst case with an empty prompt (`maxOutputTokens`
 * at `pricing`'s output price): under them every call is refused. Per-user entries of the budgets
 * file count too. A start-up warning; the words name the level and period.
 */
export function limitsBelowOneCall(settings: BudgetSettings, pricing: ModelPricing | undefined, maxOutputTokens: number): LimitBelowOneCall[] {
  const needUsd = (worstCaseMicroUsd(pricing, 0, maxOutputTokens) ?? 0) / 1_000_000;
  const found: LimitBelowOneCall[] = [];
  const check = (what: string, limit: BudgetLimit | undefined) => {
    if (limit?.usd !== undefined && pricing && limit.usd < needUsd) found.push({ what, limit: limit.usd, need: needUsd, unit: 'usd' });
    if (limit?.tokens !== undefined && limit.tokens < maxOutputTokens) found.push({ what, limit: limit.tokens, need: maxOutputTokens, unit: 'tokens' });
  };
  const levels: Array<[string, LevelLimits]> = [['user', settings.user], ['chat', settings.chat], ['deployment', settings.deployment]];
  for (const [subject, own] of Object.entries(settings.users)) if (own !== 'unlimited') levels.push([`user ${subject}`, own]);
  for (const [level, limits] of levels) {
    check(`${level} daily`, limits.day);
    check(`${level} monthly`, limits.month);
  }
  check('turn', settings.turn);
  return found;
}

/** What a refused call or message names: the level, period, the limit that holds and when it resets. */
export interface BudgetBreach {
  level: BudgetLevel | 'turn';
  period?: BudgetPeriod;
  unit: 'usd' | 'tokens';
  limit: number;
  /**
   * What was used when it held, in the limit's unit. Below `limit`: the limit is not reached but the
   * call's worst case does not fit in what is left. Absent: used up.
   */
  used?: number;
  /** When the period ends (absent for a turn cap). */
  resetsAtMs?: number;
  /** The call would fit with nothing in flight: the same subject's other calls still hold the room. */
  inFlight?: boolean;
  /** What the refused call could use at most (its worst case), in the limit's unit: why what is left is not enough. */
  needed?: number;
}

/**
 * The message a user reads when a limit holds, e.g. "This chat has used today's budget of $2.00. It
 * resets at 00:00 UTC, in 3 h 12 min."; when `breach.used` is below the limit, "This chat has nearly
 * used today's budget of $2.00: $0.03 is left, not enough for another answer. It resets at …"; when
 * only the subject's calls in flight hold the room (`breach.inFlight`), that those are still being
 * answered and to try again in a moment.
 */
export function budgetMessage(breach: BudgetBreach, nowMs: number, timeZone: string): string {
  const amount = formatAmount(breach.unit, breach.limit);
  const short = breach.used !== undefined && breach.used < breach.limit;
  if (breach.level === 'turn') {
    return short ? `This request was stopped before its next step: it could go over the limit of one turn (${amount}). Send a new message to go on.`
      : `This request reached the limit of one turn (${amount}) and was stopped. Send a new message to go on.`;
  }
  if (breach.inFlight) return `${OTHERS_OF[breach.level]} still being answered and may use the rest of ${periodBudget(breach)} of ${amount}. Try again in a moment.`;
  const who = WHO_HAS[breach.level];
  const left = short ? `: ${leftOf(breach.unit, breach.limit - breach.used!)}, not enough for another answer` : '';
  const why = short && breach.needed !== undefined ? ` An answer may use up to ${formatAmount(breach.unit, breach.needed)}.` : '';
  return `${who} ${short ? 'nearly used' : 'used'} ${periodBudget(breach)} of ${amount}${left}.${why}${resetsIn(breach, nowMs, timeZone)}`;
}

/**
 * The one notice at the notice share, with the real share (rounded down), what is left and when it
 * resets, e.g. "This chat has used 96% of today's budget of $2.00: $0.08 is left. It resets at 00:00 UTC, in 3 h 12 min."
 */
export function budgetNoticeMessage(breach: BudgetBreach & { used: number }, nowMs: number, timeZone: string): string {
  const left = leftOf(breach.unit, Math.max(0, breach.limit - breach.used));
  return `${WHO_HAS[breach.level]} used ${percentUsed(breach.used, breach.limit)} of ${periodBudget(breach)} of ${formatAmount(breach.unit, breach.limit)}: ${left}.${resetsIn(breach, nowMs, timeZone)}`;
}

/** A duration as a person reads it: `3 h 12 min`, `45 min`, `1 d 2 h`. */
export function duration(ms: number): string {
  const minutes = Math.max(1, Math.ceil(ms / 60_000));
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const rest = minutes % 60;
  if (days > 0) return hours > 0 ? `${days} d ${hours} h` : `${days} d`;
  if (hours > 0) return rest > 0 ? `${hours} h ${rest} min` : `${hours} h`;
  return `${rest} min`;
}

const OTHERS_OF: Readonly<Record<BudgetLevel, string>> = { user: 'Your other requests are', chat: "This chat's other requests are", deployment: 'Other requests to this bot are' };

const WHO_HAS: Readonly<Record<BudgetLevel | 'turn', string>> = { user: 'You have', chat: 'This chat has', deployment: 'This bot has', turn: 'This turn has' };

/**
 * The share of a limit used, as a person reads it: rounded down, so a limit not used up never reads
 * `100%` (99.6% reads `99%`), and a little used reads `<1%`, not `0%`. Self-contained: the overview
 * page inlines it with `toString()`.
 */
export function percentUsed(used: number, limit: number): string {
  // A limit of 0 holds from the start: used up.
  if (used >= limit) return limit > 0 ? `${Math.floor((used * 100) / limit)}%` : '100%';
  const percent = Math.min(99, Math.floor((used * 100) / limit));
  return percent === 0 && used > 0 ? '<1%' : `${percent}%`;
}

/** "$0.03 is left", "1 token is left", "500 tokens are left". */
function leftOf(unit: 'usd' | 'tokens', value: number): string {
  return `${formatAmount(unit, value)} ${unit === 'tokens' && Math.round(value) !== 1 ? 'are' : 'is'} left`;
}

function periodBudget(breach: BudgetBreach): string {
  return breach.period === 'month' ? "this month's budget" : "today's budget";
}

function resetsIn(breach: BudgetBreach, nowMs: number, timeZone: string): string {
  return breach.resetsAtMs === undefined ? '' : ` It resets at ${clockTime(breach.resetsAtMs, timeZone)} ${timeZone}, in ${duration(breach.resetsAtMs - nowMs)}.`;
}

function clockTime(ms: number, timeZone: string): string {
  return new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(ms);
}

function localDate(ms: number, timeZone: string): { year: number; month: number; day: number } {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(ms);
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return { year: get('year'), month: get('month'), day: get('day') };
}

/** Offset of `timeZone` from UTC at `ms`, in ms (local = utc + offset). */
function offsetMs(ms: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' }).formatToParts(ms);
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  const local = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return local - Math.floor(ms / 1000) * 1000;
}

/**
 * The first instant (UTC) whose wall clock in `timeZone` reads `localAsUtc` (a local midnight given
 * as if it were UTC) or later. Where a clock change skips midnight (America/Santiago springs from
 * 00:00 to 01:00), that is the change itself: the day starts at 01:00.
 */
function localMidnightToUtc(localAsUtc: number, timeZone: string): number {
  const wall = (ms: number) => ms + offsetMs(ms, timeZone);
  const guess = localAsUtc - offsetMs(localAsUtc, timeZone);
  const instant = localAsUtc - offsetMs(guess, timeZone);
  if (wall(instant) >= localAsUtc) return instant;
  // Skipped: the change lies within a day after (offsets differ by less); search it to the second.
  let before = Math.floor(instant / 1000);
  let after = before + 86_400;
  while (after - before > 1) {
    const mid = Math.floor((before + after) / 2);
    if (wall(mid * 1000) >= localAsUtc) after = mid;
    else before = mid;
  }
  return after * 1000;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** USD per minute of audio of known transcription models (list prices); other models are unpriced. */
export const TRANSCRIPTION_USD_PER_MINUTE: Readonly<Record<string, number>> = Object.freeze({ 'whisper-1': 0.006, 'gpt-4o-transcribe': 0.006, 'gpt-4o-mini-transcribe': 0.003 });

/** Bytes one second of compressed speech takes at least (8 kbit/s): bounds an upload's duration from above. */
export const MIN_AUDIO_BYTES_PER_SECOND = 1000;

/** Bytes per second assumed when the provider reports no duration (32 kbit/s, a typical voice message). */
export const TYPICAL_AUDIO_BYTES_PER_SECOND = 4000;

/** Cost in micro-USD of `seconds` of audio transcribed by `model`; undefined when the model has no price. */
export function transcriptionMicroUsd(model: string, seconds: number): number | undefined {
  const name = model.toLowerCase().replace(/^.*\//, '');
  const key = Object.keys(TRANSCRIPTION_USD_PER_MINUTE).find((known) => name === known || name.startsWith(`${known}-`));
  return key === undefined ? undefined : Math.ceil((TRANSCRIPTION_USD_PER_MINUTE[key]! * seconds / 60) * 1_000_000);
}

/** One counter with the limits in force on it (`/usage`, `chatgate budgets list`). */
export interface CounterState {
  level: BudgetLevel;
  period: BudgetPeriod;
  subject: string;
  usedUsd: number;
  usedTokens: number;
  /** Tokens of calls of a model with no price: counted in `usedTokens`, not in `usedUsd`. */
  unpricedTokens?: number;
  /** Limits in force (stored override, else configured); undefined: none. */
  limitUsd?: number;
  limitTokens?: number;
  resetsAtMs: number;
}

/** One limit of a counter: what is used, the limit, what is left (never below 0). */
export interface LimitLeft {
  unit: 'usd' | 'tokens';
  used: number;
  limit: number;
  left: number;
  /** USD only: tokens of calls of a model with no price, not in `used` (absent: none). */
  unpricedTokens?: number;
}

/** The limits set on a counter, each with what is left of it. */
export function limitsLeft(counter: CounterState): LimitLeft[] {
  const rows: LimitLeft[] = [];
  const unpriced = counter.unpricedTokens ? { unpricedTokens: counter.unpricedTokens } : {};
  if (counter.limitUsd !== undefined) rows.push({ unit: 'usd', used: counter.usedUsd, limit: counter.limitUsd, left: Math.max(0, counter.limitUsd - counter.usedUsd), ...unpriced });
  if (counter.limitTokens !== undefined) rows.push({ unit: 'tokens', used: counter.usedTokens, limit: counter.limitTokens, left: Math.max(0, counter.limitTokens - counter.usedTokens) });
  return rows;
}

/** An amount as a person reads it: `$1.58`, `$0.039` (the one money rule, src/core/money.ts), `1 token`, `38,000 tokens`. */
export function formatAmount(unit: 'usd' | 'tokens', value: number): string {
  return unit === 'tokens' ? countOf(Math.round(value), 'token') : formatMoney(value);
}

/**
 * What a limit's counter used, e.g. `$0.42`, `1,200 tokens`; a USD amount that leaves out calls of a
 * model with no price says so: `$0.00 + 1,234 tokens at no known price` (never a made-up $0).
 */
export function formatUsed(l: Pick<LimitLeft, 'unit' | 'used' | 'unpricedTokens'>): string {
  const amount = formatAmount(l.unit, l.used);
  return l.unit === 'usd' && l.unpricedTokens ? `${amount} + ${formatAmount('tokens', l.unpricedTokens)} at no known price` : amount;
}

/**
 * `/usage`'s lines of what is left, one per limit that applies (counters without one are left
 * out), e.g. "You, today: $0.42 of $2.00 used, $1.58 left; resets at 00:00 UTC, in 3 h 12 min". Calls
 * of a model with no price count in tokens only: "$0.00 of $0.01 used and 1,234 tokens at no known price, …".
 * `blocked` (the marker that holds, `ledger.check`) turns its limit's line into "…: blocked, used
 * up; resets at …" (or "not enough left for another answer"): never "left" to a user who is refused.
 */
export function describeBudgetsLeft(counters: readonly CounterState[], nowMs: number, timeZone: string, blocked?: BudgetBreach | null): string[] {
  const who = { user: 'You', chat: 'This chat', deployment: 'This bot' };
  let shown = false;
  const lines = counters.flatMap((c) => limitsLeft(c).map((l) => {
    const when = c.period === 'day' ? 'today' : 'this month';
    const unpriced = l.unpricedTokens ? ` and ${formatAmount('tokens', l.unpricedTokens)} at no known price` : '';
    const used = l.unit === 'usd' ? `${formatAmount('usd', l.used)} of ${formatAmount('usd', l.limit)} used${unpriced}` : `${Math.round(l.used).toLocaleString('en-US')} of ${formatAmount('tokens', l.limit)} used`;
    const resets = `resets at ${clockTime(c.resetsAtMs, timeZone)} ${timeZone}, in ${duration(c.resetsAtMs - nowMs)}`;
    const holds = blocked && blocked.level === c.level && blocked.period === c.period && blocked.unit === l.unit;
    if (!holds) return `${who[c.level]}, ${when}: ${used}, ${formatAmount(l.unit, l.left)} left; ${resets}`;
    shown = true;
    const why = blocked.used !== undefined && blocked.used < blocked.limit && l.used < l.limit ? 'not enough left for another answer' : 'used up';
    return `${who[c.level]}, ${when}: ${used}; blocked, ${why}; ${resets}`;
  }));
  // A marker whose counter is not listed (its limit's unit or level has no line) still shows.
  return blocked && !shown ? [budgetMessage(blocked, nowMs, timeZone), ...lines] : lines;
}
