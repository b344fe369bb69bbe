/**
 * The dashboard overview's figures (`GET /api/usage/overview`), read through the usage read model
 * so they are the CLI's and `/api/usage`'s: today, 7 and 30 days, the daily series of 30 days, the
 * top users, chats and models of 7 days, what compaction was worth, and how full the budgets are
 * (a subject refused now, a marker holding, first).
 */
import { formatAmount, percentUsed } from '../core/budget.js';
import { formatMoney } from '../core/money.js';
import type { CounterState, MarkerState } from '../budget/ledger.js';
import { compactionSentence, spanWords, type UsageFigures } from './figures.js';
import type { UsageDigest, UsageGroup, UsagePoint, UsageReader } from './read-model.js';

/** Format version of the overview JSON. */
export const USAGE_OVERVIEW_FORMAT = 1;

/** Rows of each top list. */
const TOP = 5;

/** Budget rows beside those at or over the notice share (always shown, up to {@link BUDGET_ROWS_MAX}). */
const BUDGET_ROWS = 8;
const BUDGET_ROWS_MAX = 50;

/** Subjects (users, chats with usage in 30 days, by cost) whose counters are read; the CLI lists every one. */
const BUDGET_SUBJECTS_MAX = 500;

/** The deployment's subject (src/budget's `DEPLOYMENT_SUBJECT`; this folder imports the ledger's types only). */
const DEPLOYMENT = 'all';

/** The notice share when none is given (CHATGATE_BUDGET_NOTICE_PERCENT's default). */
const DEFAULT_NOTICE_PERCENT = 80;

/** One span of the overview: its `since` (as `chatgate usage --since` takes it) and totals. */
export interface OverviewSpan {
  since: string;
  span: string;
  totals: UsageFigures;
}

/** One budget counter and how full it is (0..1+; undefined without a limit of that unit). */
export interface OverviewBudget extends CounterState {
  usdShare?: number;
  tokenShare?: number;
  /** The larger of the two shares. */
  share: number;
  /**
   * The fuller limit as the page shows it: `$0.42 of $2.00`, `1,280 of 1,000 tokens`; tokens of
   * calls with no price are named (`$0.00 of $0.01 + 1,234 tokens, price unknown`), never a made-up $0.
   */
  usedText: string;
  /** Its share, rounded down (`99%` until it is used up, `<1%`): src/core/budget.ts `percentUsed`. */
  percentText: string;
  /**
   * Set when a marker holds on this counter (its user, chat or the bot is refused until it resets):
   * `used up`, or `no room` when what is left does not fit another call's worst case.
   */
  blocked?: 'used up' | 'no room';
  /**
   * Set on every counter of a subject whose marker this version cannot read (another chatgate version
   * wrote it): what it is and what drops it. It holds nothing; the row is shown first, beside the blocked.
   */
  markerUnreadable?: string;
}

/** The budgets part of the overview: the fullest counters first, and what is left out. */
export interface OverviewBudgets {
  /** Every counter at or over the notice share, then the fullest others (the deployment's always), fullest first. */
  rows: OverviewBudget[];
  /** Counters with a limit read but not in `rows` (`chatgate budgets list` shows every one). */
  more: number;
  /** The share from which a counter is near its limit (CHATGATE_BUDGET_NOTICE_PERCENT / 100). */
  noticeShare: number;
}

/** Options of {@link readUsageOverview}. */
export interface UsageOverviewOptions {
  /** The budget counters of each subject (src/budget's ledger `statesOf`). Absent: no budgets. */
  budgets?: BudgetStates;
  /** Percent of a limit from which it is near (the budgets' notice). Default 80. */
  noticePercent?: number;
  /** The limit whose exhaustion marker holds, per subject (src/budget's ledger `blockedOf`). Absent: no row is shown blocked. */
  blocked?: BudgetBlocks;
}

/** What the overview page shows. */
export interface UsageOverview {
  format: typeof USAGE_OVERVIEW_FORMAT;
  generatedAtMs: number;
  today: OverviewSpan;
  week: OverviewSpan;
  month: OverviewSpan;
  /** One point a day, 30 days, oldest first. */
  series: UsagePoint[];
  /** Highest cost of the last 7 days first. */
  top: { user: UsageGroup[]; chat: UsageGroup[]; model: UsageGroup[] };
  /** "compaction spent $0.04 and saved $0.91 in the last 7 days", and the chats where it did most. */
  compaction: { sentence: string; chats: UsageGroup[] };
  /** How full the budgets are. Without budgets: no rows. */
  budgets: OverviewBudgets;
}

/** The budget counters (day, month) of each subject, in order (src/budget's ledger `statesOf`: a few hundred a script call). */
export type BudgetStates = (subjects: ReadonlyArray<{ level: 'user' | 'chat' | 'deployment'; subject: string }>) => Promise<CounterState[][]>;

/** What the exhaustion marker of each subject says, in order: the limit that holds, one unreadable, or null (src/budget's ledger `blockedOf`). */
export type BudgetBlocks = (subjects: ReadonlyArray<{ level: 'user' | 'chat' | 'deployment'; subject: string }>) => Promise<MarkerState[]>;

/**
 * Reads the overview: the rollups of 1, 7 and 30 days (each as `--since` reads it) and the budget
 * counters of the deployment and of every user and chat with usage in 30 days (up to
 * {@link BUDGET_SUBJECTS_MAX} of each by cost, read in batches).
 */
export async function readUsageOverview(reader: UsageReader, options: UsageOverviewOptions = {}): Promise<UsageOverview> {
  const [today, week, month] = await Promise.all([reader.digest('1d'), reader.digest('7d'), reader.digest('30d')]);
  const span = (read: UsageDigest): OverviewSpan => ({ since: read.since.text, span: spanWords(read.since), totals: read.totals });
  const top = { user: week.groups.user.slice(0, TOP), chat: week.groups.chat.slice(0, TOP), model: week.groups.model.slice(0, TOP) };
  const worth = (g: UsageGroup) => g.figures.compactionSaved.tokens + g.figures.compactionSpent.tokens;
  return {
    format: USAGE_OVERVIEW_FORMAT, generatedAtMs: month.untilMs,
    today: span(today), week: span(week), month: span(month),
    series: month.series, top,
    compaction: {
      sentence: compactionSentence(week.totals, 'in the last 7 days'),
      chats: week.groups.chat.filter((g) => worth(g) > 0).sort((a, b) => worth(b) - worth(a)).slice(0, TOP),
    },
    budgets: await readBudgets(options, month.groups.user.map((g) => g.key), month.groups.chat.map((g) => g.key)),
  };
}

/** The counters with a limit of the deployment, `users` and `chats` — each once — fullest first, bounded. */
async function readBudgets(options: UsageOverviewOptions, users: string[], chats: string[]): Promise<OverviewBudgets> {
  const noticeShare = (options.noticePercent ?? DEFAULT_NOTICE_PERCENT) / 100;
  if (!options.budgets) return { rows: [], more: 0, noticeShare };
  const subjects = [
    { level: 'deployment' as const, subject: DEPLOYMENT },
    ...[...new Set(users.filter(Boolean))].slice(0, BUDGET_SUBJECTS_MAX).map((subject) => ({ level: 'user' as const, subject })),
    ...[...new Set(chats.filter(Boolean))].slice(0, BUDGET_SUBJECTS_MAX).map((subject) => ({ level: 'chat' as const, subject })),
  ];
  const all: OverviewBudget[] = [];
  for (const state of (await options.budgets(subjects)).flat()) {
    if (state.limitUsd === undefined && state.limitTokens === undefined) continue;
    const usdShare = state.limitUsd ? state.usedUsd / state.limitUsd : undefined;
    const tokenShare = state.limitTokens ? state.usedTokens / state.limitTokens : undefined;
    all.push({ ...state, ...(usdShare === undefined ? {} : { usdShare }), ...(tokenShare === undefined ? {} : { tokenShare }), share: Math.max(usdShare ?? 0, tokenShare ?? 0), ...rowTexts(state, usdShare, tokenShare) });
  }
  if (options.blocked) await markBlocked(all, options.blocked);
  // Blocked first: those are the subjects being refused now; then a marker to drop, which an operator must see.
  const flagged = (b: OverviewBudget) => Boolean(b.blocked || b.markerUnreadable);
  all.sort((a, b) => Number(flagged(b)) - Number(flagged(a)) || Number(Boolean(b.blocked)) - Number(Boolean(a.blocked)) || b.share - a.share || a.level.localeCompare(b.level) || a.subject.localeCompare(b.subject));
  const near = all.filter((b) => flagged(b) || b.share >= noticeShare).length;
  const shown = Math.min(BUDGET_ROWS_MAX, Math.max(near, BUDGET_ROWS));
  const rows = all.filter((b, k) => k < shown || b.level === 'deployment');
  return { rows, more: all.length - rows.length, noticeShare };
}

/**
 * Marks the counters a marker holds on (a marker is per level and subject; it names its period and
 * unit), and every counter of a subject whose marker this version cannot read (it names neither).
 */
async function markBlocked(rows: OverviewBudget[], blockedOf: BudgetBlocks): Promise<void> {
  const subjects = [...new Map(rows.map((row) => [`${row.level}|${row.subject}`, { level: row.level, subject: row.subject }])).values()];
  const markers = await blockedOf(subjects);
  const byKey = new Map(subjects.map((s, k) => [`${s.level}|${s.subject}`, markers[k]] as const));
  for (const row of rows) {
    const marker = byKey.get(`${row.level}|${row.subject}`);
    if (!marker) continue;
    if ('unreadable' in marker) row.markerUnreadable = marker.unreadable;
    else if (marker.period === row.period) row.blocked = marker.used !== undefined && marker.used < marker.limit ? 'no room' : 'used up';
  }
}

/** What the page shows of a counter's fuller limit (USD when it is at least as full, or the only one). */
function rowTexts(state: CounterState, usdShare: number | undefined, tokenShare: number | undefined): { usedText: string; percentText: string } {
  const usd = state.limitUsd !== undefined && (state.limitTokens === undefined || (usdShare ?? 0) >= (tokenShare ?? 0));
  if (!usd) return { usedText: `${state.usedTokens.toLocaleString('en-US')} of ${formatAmount('tokens', state.limitTokens!)}`, percentText: percentUsed(state.usedTokens, state.limitTokens!) };
  const unpriced = state.unpricedTokens ? ` + ${formatAmount('tokens', state.unpricedTokens)}, price unknown` : '';
  return { usedText: `${formatMoney(state.usedUsd)} of ${formatMoney(state.limitUsd!)}${unpriced}`, percentText: percentUsed(state.usedUsd, state.limitUsd!) };
}
