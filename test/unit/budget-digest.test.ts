/**
 * The digest of budget settings that heartbeats carry: the same for the same settings however
 * they were written, different when anything that decides which limits hold differs, `off` without a limit.
 */
import { describe, expect, it } from 'vitest';
import { NO_BUDGETS, type BudgetSettings } from '../../src/core/budget.js';
import { budgetSettingsDigest } from '../../src/redis/heartbeats.js';

const BASE: BudgetSettings = { ...NO_BUDGETS, user: { day: { usd: 2 } }, users: { 'telegram:1': 'unlimited', 'web:a': { month: { tokens: 10 } } } };

describe('budgetSettingsDigest', () => {
  it('is `off` when no limit is set, whatever the time zone or notice percent', () => {
    expect(budgetSettingsDigest(undefined)).toBe('off');
    expect(budgetSettingsDigest(NO_BUDGETS)).toBe('off');
    expect(budgetSettingsDigest({ ...NO_BUDGETS, timeZone: 'Europe/Berlin', noticePercent: 50 })).toBe('off');
  });

  it('is 12 hex digits, stable across key order, empty periods and the webhook', () => {
    const digest = budgetSettingsDigest(BASE);
    expect(digest).toMatch(/^[0-9a-f]{12}$/);
    const rewritten: BudgetSettings = {
      users: { 'web:a': { month: { tokens: 10 } }, 'telegram:1': 'unlimited' }, noticePercent: 80, timeZone: 'UTC', turn: {}, deployment: {}, chat: { month: {} }, user: { day: { usd: 2 } },
      alertWebhookUrl: 'https://hooks.example/x',
    };
    expect(budgetSettingsDigest(rewritten)).toBe(digest);
  });

  it('changes with every setting that decides which limits hold', () => {
    const variants: BudgetSettings[] = [
      { ...BASE, user: { day: { usd: 3 } } },
      { ...BASE, user: { day: { tokens: 2 } } },
      { ...BASE, user: { month: { usd: 2 } } },
      { ...BASE, chat: { day: { usd: 2 } } },
      { ...BASE, deployment: { month: { tokens: 1 } } },
      { ...BASE, turn: { usd: 1 } },
      { ...BASE, timeZone: 'Europe/Berlin' },
      { ...BASE, noticePercent: 90 },
      { ...BASE, users: { 'telegram:1': 'unlimited' } },
      { ...BASE, users: { ...BASE.users, 'telegram:1': { day: { usd: 1 } } } },
    ];
    const digests = new Set([BASE, ...variants].map(budgetSettingsDigest));
    expect(digests.size).toBe(variants.length + 1);
  });
});
