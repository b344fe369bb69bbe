import { describe, expect, it } from 'vitest';
import { budgetMessage, budgetNoticeMessage, describeBudgetsLeft, percentUsed } from '../../src/core/budget.js';
import { formatMoney } from '../../src/core/money.js';
import { parsePriceTable, pricingOf } from '../../src/core/models.js';

// What an operator and a careless user found walking the budgets (issue 23).
const now = Date.UTC(2026, 11, 2, 20, 48);
const resets = Date.UTC(2026, 11, 3);

describe('budget words', () => {
  it('says "1 token is left", never "1 tokens" or "1 token are"', () => {
    expect(budgetMessage({ level: 'user', period: 'day', unit: 'tokens', limit: 1000, used: 999, resetsAtMs: resets }, now, 'UTC'))
      .toBe("You have nearly used today's budget of 1,000 tokens: 1 token is left, not enough for another answer. It resets at 00:00 UTC, in 3 h 12 min.");
    expect(budgetNoticeMessage({ level: 'user', period: 'day', unit: 'tokens', limit: 1000, used: 998, resetsAtMs: resets }, now, 'UTC'))
      .toContain(': 2 tokens are left.');
  });

  it('never reads 100% for a limit not used up, nor 0% for one a little used', () => {
    expect(percentUsed(0.996, 1)).toBe('99%');
    expect(percentUsed(999_999, 1_000_000)).toBe('99%');
    expect(percentUsed(0.9999999999999999, 1)).toBe('99%');
    expect(percentUsed(1, 1)).toBe('100%');
    expect(percentUsed(1.05, 1)).toBe('105%');
    expect(percentUsed(0.001, 1)).toBe('<1%');
    expect(percentUsed(0, 1)).toBe('0%');
    expect(percentUsed(0, 0)).toBe('100%');
    expect(budgetNoticeMessage({ level: 'chat', period: 'day', unit: 'usd', limit: 1, used: 0.9999, resetsAtMs: resets }, now, 'UTC'))
      .toMatch(/^This chat has used 99% of today's budget of \$1\.00: \$0\.0001 is left\./);
  });
});

describe('no amount in exponent notation', () => {
  it.each([[1e-7, '$0.00'], [5e-7, '$0.000001'], [1.1e-16, '$0.00'], [0.000_001_5, '$0.000002'], [1e21, '$1000000000000000000000.00'], [1e22, '$10000000000000000000000.00']])('%s USD reads %s', (usd, text) => {
    expect(formatMoney(usd)).toBe(text);
  });

  it('in what /usage says is left', () => {
    const lines = describeBudgetsLeft([{ level: 'user', period: 'day', subject: 'web:a', usedUsd: 0.3 - 0.1 - 0.2 + 1e-7, usedTokens: 0, limitUsd: 1e21, resetsAtMs: resets }], now, 'UTC');
    expect(lines.join('\n')).not.toMatch(/\de[+-]?\d/);
  });
});

describe('/usage of a user who is blocked', () => {
  const counter = { level: 'user' as const, period: 'day' as const, subject: 'web:a', usedUsd: 0.0098, usedTokens: 900, limitUsd: 0.01, resetsAtMs: resets };

  it('says the limit is used up and when it resets, never what is "left"', () => {
    const used = { ...counter, usedUsd: 0.01 };
    const breach = { level: 'user' as const, period: 'day' as const, unit: 'usd' as const, limit: 0.01, resetsAtMs: resets };
    expect(describeBudgetsLeft([used], now, 'UTC', breach)).toEqual(['You, today: $0.01 of $0.01 used; blocked, used up; resets at 00:00 UTC, in 3 h 12 min']);
  });

  it('says so when the next answer does not fit in what is left', () => {
    const breach = { level: 'user' as const, period: 'day' as const, unit: 'usd' as const, limit: 0.01, used: 0.0098, resetsAtMs: resets };
    expect(describeBudgetsLeft([counter], now, 'UTC', breach))
      .toEqual(['You, today: $0.0098 of $0.01 used; blocked, not enough left for another answer; resets at 00:00 UTC, in 3 h 12 min']);
  });

  it('names a limit that holds even when no counter line shows it', () => {
    const breach = { level: 'deployment' as const, period: 'month' as const, unit: 'tokens' as const, limit: 5000, resetsAtMs: Date.UTC(2027, 0, 1) };
    expect(describeBudgetsLeft([counter], now, 'UTC', breach)[0]).toBe("This bot has used this month's budget of 5,000 tokens. It resets at 00:00 UTC, in 29 d 3 h.");
  });
});

describe('the prices file', () => {
  it('refuses an unknown key, naming the model and the key', () => {
    expect(parsePriceTable({ 'my-model': { input: 1, output: 2, ouput: 2 } })).toEqual({ issues: ['"my-model": unknown key `ouput` (did you mean `output`?); the keys are input, output, cachedInput'] });
  });

  it('matches model names case-insensitively, and refuses two names that differ in case only', () => {
    const parsed = parsePriceTable({ 'My-Model': { input: 1, output: 2 }, 'Team-*': { input: 3, output: 4 } });
    expect('prices' in parsed).toBe(true);
    const prices = (parsed as { prices: Record<string, { input: number; output: number }> }).prices;
    expect(pricingOf('my-model', prices)).toEqual({ input: 1, output: 2 });
    expect(pricingOf('openai/MY-MODEL', prices)).toEqual({ input: 1, output: 2 });
    expect(pricingOf('team-7b', prices)).toEqual({ input: 3, output: 4 });
    expect(parsePriceTable({ 'a-model': { input: 1, output: 2 }, 'A-Model': { input: 3, output: 4 } }))
      .toEqual({ issues: ['"A-Model": the same model as "a-model" (names are matched case-insensitively)'] });
  });
});
