import { describe, expect, it } from 'vitest';
import type { CounterState } from '../../src/core/budget.js';
import { toUsageFigures } from '../../src/usage/figures.js';
import { readUsageOverview } from '../../src/usage/overview.js';
import type { UsageDigest, UsageReader } from '../../src/usage/read-model.js';
import { zeroFigures } from '../../src/usage/rollup-format.js';

const resets = Date.UTC(2026, 11, 3);
const USERS = Array.from({ length: 12 }, (_, k) => `web:u${k}`);

/** A reader whose 30 days saw USERS (each in a chat of its own), nothing else. */
function reader(): UsageReader {
  const figures = toUsageFigures(zeroFigures());
  const digest: UsageDigest = {
    since: { text: '30d', period: 'day', fromMs: 0 }, untilMs: resets - 1, totals: figures, series: [],
    groups: { user: USERS.map((key) => ({ key, figures })), chat: USERS.map((key) => ({ key, figures })), channel: [], model: [] },
  };
  return { digest: async () => digest, report: async () => { throw new Error('not read'); } };
}

type Subject = { level: 'user' | 'chat' | 'deployment'; subject: string };

/** The counters of each subject, as the ledger's `statesOf` reads them: `own` for users, nothing for the rest. */
const statesOf = (own: (user: string) => CounterState[]) => async (subjects: readonly Subject[]): Promise<CounterState[][]> =>
  subjects.map((s) => (s.level === 'user' ? own(s.subject) : []));

/** User `k` used k% of $1.00 today; u3's calls were of a model with no price. */
const counters = statesOf((user) => {
  const k = USERS.indexOf(user);
  return [{ level: 'user', period: 'day', subject: user, usedUsd: k / 100, usedTokens: 100, limitUsd: 1, resetsAtMs: resets, ...(k === 3 ? { unpricedTokens: 1234 } : {}) }];
});

describe('the overview\'s budgets', () => {
  it('shows a blocked subject first, though its limit is far from full, and says why', async () => {
    const overview = await readUsageOverview(reader(), {
      budgets: counters,
      blocked: async (subjects) => subjects.map((s) => (s.level === 'user' && s.subject === 'web:u1' ? { level: 'user', period: 'day', unit: 'usd', limit: 1, used: 0.01, resetsAtMs: resets } : null)),
    });
    const rows = overview.budgets.rows;
    expect(rows[0]).toMatchObject({ subject: 'web:u1', blocked: 'no room', usedText: '$0.01 of $1.00', percentText: '1%' });
    expect(rows.filter((r) => r.blocked)).toHaveLength(1);
    expect(rows.slice(1).map((r) => r.subject)).toEqual(['web:u11', 'web:u10', 'web:u9', 'web:u8', 'web:u7', 'web:u6', 'web:u5']);
  });

  it('shows the counters of a subject whose marker it cannot read first, saying so, and lists the rest as they are', async () => {
    const unreadable = 'marker unreadable (format 9): it blocks nothing and goes when its period ends; `chatgate budgets reset user web:u1` drops it now (and any limits stored for user web:u1)';
    const overview = await readUsageOverview(reader(), {
      budgets: counters,
      blocked: async (subjects) => subjects.map((s) => (s.level === 'user' && s.subject === 'web:u1' ? { unreadable, format: 9 } : null)),
    });
    const rows = overview.budgets.rows;
    expect(rows[0]).toMatchObject({ subject: 'web:u1', markerUnreadable: unreadable, usedText: '$0.01 of $1.00' });
    expect(rows[0]).not.toHaveProperty('blocked');
    expect(rows.slice(1).map((r) => r.subject)).toEqual(['web:u11', 'web:u10', 'web:u9', 'web:u8', 'web:u7', 'web:u6', 'web:u5']);
    expect(rows.slice(1).some((r) => r.markerUnreadable !== undefined || r.blocked !== undefined)).toBe(false);
  });

  it('names the tokens of unpriced calls (never a made-up $0) and never reads 100% before a limit is used up', async () => {
    const overview = await readUsageOverview(reader(), {
      budgets: statesOf((user) => (user === 'web:u0' ? [
        { level: 'user', period: 'day', subject: user, usedUsd: 0, usedTokens: 1234, unpricedTokens: 1234, limitUsd: 0.01, resetsAtMs: resets },
        { level: 'user', period: 'month', subject: user, usedUsd: 0.996, usedTokens: 5, limitUsd: 1, resetsAtMs: resets },
      ] : [])),
    });
    expect(overview.budgets.rows.map((r) => [r.usedText, r.percentText])).toEqual([['$0.996 of $1.00', '99%'], ['$0.00 of $0.01 + 1,234 tokens, price unknown', '0%']]);
  });
});
