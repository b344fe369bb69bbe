/**
 * The dashboard overview's figures (`GET /api/usage/overview`), read through the usage read model
 * so they are the CLI's and `/api/usage`'s: today, 7 and 30 days, the daily series of 30 days, the
 * top users, chats and models of 7 days, what compaction was worth, and how full the budgets are.
 */
import type { CounterState } from '../budget/ledger.js';
import { compactionSentence, spanWords, type UsageFigures } from './figures.js';
import type { UsageDigest, UsageGroup, UsagePoint, UsageReader } from './read-model.js';

/** Format version of the overview JSON. */
export const USAGE_OVERVIEW_FORMAT = 1;

/** Rows of each top list. */
const TOP = 5;

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
  /** Counters with a limit: the deployment's, and those of the top users and chats. Empty without budgets. */
  budgets: OverviewBudget[];
}

/** The budget counters of a user and chat (src/budget's ledger `state`). */
export type BudgetStates = (scope: { user: string; chat: string }) => Promise<CounterState[]>;

/** Reads the overview: the rollups of 1, 7 and 30 days (each as `--since` reads it) and the budget counters. */
export async function readUsageOverview(reader: UsageReader, budgets?: BudgetStates): Promise<UsageOverview> {
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
    budgets: budgets ? await readBudgets(budgets, top.user.map((g) => g.key), top.chat.map((g) => g.key)) : [],
  };
}

/** The deployment's counters, then the top users' and chats' — each counter once, only those with a limit. */
async function readBudgets(states: BudgetStates, users: string[], chats: string[]): Promise<OverviewBudget[]> {
  const scopes = [{ user: '', chat: '' }, ...users.filter(Boolean).map((user) => ({ user, chat: '' })), ...chats.map((chat) => ({ user: '', chat }))];
  const seen = new Set<string>();
  const out: OverviewBudget[] = [];
  for (const list of await Promise.all(scopes.map((scope) => states(scope)))) {
    for (const state of list) {
      const id = `${state.level}|${state.period}|${state.subject}`;
      const anonymous = !state.subject && state.level !== 'deployment';
      if (seen.has(id) || anonymous || (state.limitUsd === undefined && state.limitTokens === undefined)) continue;
      seen.add(id);
      out.push({
        ...state,
        ...(state.limitUsd ? { usdShare: state.usedUsd / state.limitUsd } : {}),
        ...(state.limitTokens ? { tokenShare: state.usedTokens / state.limitTokens } : {}),
      });
    }
  }
  return out;
}
