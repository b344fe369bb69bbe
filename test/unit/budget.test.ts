import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { budgetMessage, budgetNoticeMessage, describeBudgetsLeft, duration, formatAmount, formatUsed, limitsLeft, periodWindow, transcriptionMicroUsd, worstCaseMicroUsd } from '../../src/core/budget.js';
import { parsePriceTable, pricingOf } from '../../src/core/models.js';

describe('budget periods', () => {
  it.each([
    ['day', 'UTC', Date.UTC(2026, 11, 31, 23, 59), '2026-12-31', Date.UTC(2027, 0, 1)],
    ['month', 'UTC', Date.UTC(2026, 11, 31, 23, 59), '2026-12', Date.UTC(2027, 0, 1)],
    ['day', 'Europe/Berlin', Date.UTC(2026, 11, 2, 23, 30), '2026-12-03', Date.UTC(2026, 11, 3, 23)],
    ['day', 'America/New_York', Date.UTC(2026, 2, 8, 12), '2026-03-08', Date.UTC(2026, 2, 9, 4)],
    ['month', 'Asia/Tokyo', Date.UTC(2026, 1, 27, 16), '2026-02', Date.UTC(2026, 1, 28, 15)],
  ] as const)('%s in %s at %s is %s, ending at %s', (period, zone, now, id, end) => {
    expect(periodWindow(period, now, zone)).toEqual({ id, endsAtMs: end });
  });

  it('a day whose midnight a clock change skips ends when the next day starts (01:00 in Santiago)', () => {
    // 2038-09-05 00:00 -04 does not exist: clocks go from 23:59:59 to 01:00 -03, at 04:00 UTC.
    const window = periodWindow('day', Date.UTC(2038, 8, 5, 2), 'America/Santiago');
    expect(window).toEqual({ id: '2038-09-04', endsAtMs: Date.UTC(2038, 8, 5, 4) });
    expect(budgetMessage({ level: 'user', period: 'day', unit: 'usd', limit: 1, resetsAtMs: window.endsAtMs }, Date.UTC(2038, 8, 5, 2), 'America/Santiago'))
      .toBe("You have used today's budget of $1.00. It resets at 01:00 America/Santiago, in 2 h.");
  });

  // Zones whose clocks change at midnight, by half an hour, or across the date line, beside plain ones.
  const zones = ['UTC', 'America/Santiago', 'America/Havana', 'Asia/Beirut', 'America/Asuncion', 'Australia/Lord_Howe', 'Pacific/Apia', 'Pacific/Chatham', 'America/New_York', 'Asia/Kolkata'];
  it('every window holds its instant and ends where the next begins, in every zone, 2000 to 2040', () => {
    fc.assert(fc.property(fc.constantFrom(...zones), fc.constantFrom('day' as const, 'month' as const), fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2040, 0, 1) }), (zone, period, now) => {
      const window = periodWindow(period, now, zone);
      expect(window.endsAtMs).toBeGreaterThan(now);
      expect(periodWindow(period, window.endsAtMs - 1000, zone).id).toBe(window.id);
      expect(periodWindow(period, window.endsAtMs, zone).id).not.toBe(window.id);
    }), { numRuns: 1000 });
  });
  it('every day of 2026 through 2031 in Santiago and Havana, where midnight is skipped some days, ends where the next begins', () => {
    for (const zone of ['America/Santiago', 'America/Havana']) {
      for (let noon = Date.UTC(2026, 0, 1, 16); noon < Date.UTC(2032, 0, 1); noon += 86_400_000) {
        const window = periodWindow('day', noon, zone);
        expect(periodWindow('day', window.endsAtMs - 1000, zone).id, `${zone} ${window.id}`).toBe(window.id);
        expect(periodWindow('day', window.endsAtMs, zone).id, `${zone} ${window.id}`).not.toBe(window.id);
      }
    }
  });
});

describe('budget messages', () => {
  const now = Date.UTC(2026, 11, 2, 20, 48);
  it('names the level, the limit, the reset time and how long until then', () => {
    expect(budgetMessage({ level: 'chat', period: 'day', unit: 'usd', limit: 2, resetsAtMs: Date.UTC(2026, 11, 3) }, now, 'UTC'))
      .toBe("This chat has used today's budget of $2.00. It resets at 00:00 UTC, in 3 h 12 min.");
    expect(budgetMessage({ level: 'user', period: 'month', unit: 'tokens', limit: 1_000_000, resetsAtMs: Date.UTC(2027, 0, 1) }, now, 'UTC'))
      .toBe("You have used this month's budget of 1,000,000 tokens. It resets at 00:00 UTC, in 29 d 3 h.");
  });
  it('says when the limit is not reached but the next call\'s worst case does not fit', () => {
    expect(budgetMessage({ level: 'chat', period: 'day', unit: 'usd', limit: 2, used: 1.97, resetsAtMs: Date.UTC(2026, 11, 3) }, now, 'UTC'))
      .toBe("This chat has nearly used today's budget of $2.00: $0.03 is left, not enough for another answer. It resets at 00:00 UTC, in 3 h 12 min.");
    expect(budgetMessage({ level: 'user', period: 'day', unit: 'tokens', limit: 10_000, used: 6_000, needed: 4_800, resetsAtMs: Date.UTC(2026, 11, 3) }, now, 'UTC'))
      .toBe("You have nearly used today's budget of 10,000 tokens: 4,000 tokens are left, not enough for another answer. An answer may use up to 4,800 tokens. It resets at 00:00 UTC, in 3 h 12 min.");
    expect(budgetMessage({ level: 'user', period: 'day', unit: 'tokens', limit: 1000, used: 1000, resetsAtMs: Date.UTC(2026, 11, 3) }, now, 'UTC'))
      .toBe("You have used today's budget of 1,000 tokens. It resets at 00:00 UTC, in 3 h 12 min.");
    expect(budgetMessage({ level: 'user', period: 'day', unit: 'tokens', limit: 1000, used: 400, resetsAtMs: Date.UTC(2026, 11, 3), inFlight: true }, now, 'UTC'))
      .toBe("Your other requests are still being answered and may use the rest of today's budget of 1,000 tokens. Try again in a moment.");
    expect(budgetMessage({ level: 'turn', unit: 'tokens', limit: 50_000, used: 42_000 }, now, 'UTC'))
      .toBe('This request was stopped before its next step: it could go over the limit of one turn (50,000 tokens). Send a new message to go on.');
  });
  it('the notice states the real share (rounded down), what is left and when it resets', () => {
    expect(budgetNoticeMessage({ level: 'deployment', period: 'day', unit: 'usd', limit: 50, used: 40, resetsAtMs: Date.UTC(2026, 11, 3) }, now, 'UTC'))
      .toBe("This bot has used 80% of today's budget of $50.00: $10.00 is left. It resets at 00:00 UTC, in 3 h 12 min.");
    expect(budgetNoticeMessage({ level: 'user', period: 'day', unit: 'usd', limit: 0.01, used: 0.00968, resetsAtMs: Date.UTC(2026, 11, 3) }, now, 'UTC'))
      .toBe("You have used 96% of today's budget of $0.01: $0.00032 is left. It resets at 00:00 UTC, in 3 h 12 min.");
  });
  it.each([[59_000, '1 min'], [3_600_000, '1 h'], [3_660_000, '1 h 1 min'], [86_400_000, '1 d']])('duration %s ms reads %s', (ms, text) => {
    expect(duration(ms)).toBe(text);
  });
});

describe('prices', () => {
  it('adds and overrides prices by name and pattern; an unknown model has no price (never $0)', () => {
    const prices = { 'my-model*': { input: 1, output: 2 }, 'gpt-4o-mini': { input: 9, output: 9 } };
    expect(pricingOf('my-model-7b', prices)).toEqual({ input: 1, output: 2 });
    expect(pricingOf('gpt-4o-mini', prices)).toEqual({ input: 9, output: 9 });
    expect(pricingOf('gpt-4o', prices)?.input).toBe(2.5);
    expect(pricingOf('llama3.1:8b', prices)).toBeUndefined();
    expect(worstCaseMicroUsd(undefined, 1000, 1000)).toBeUndefined();
    expect(worstCaseMicroUsd({ input: 0.15, output: 0.6 }, 1000, 4096)).toBe(Math.ceil(150 + 2457.6));
  });
  it('refuses a bad prices file naming each bad entry', () => {
    expect(parsePriceTable({ a: { input: 1, output: -1 }, b: { input: 1, output: 1, cached: 1 }, c: 'x' })).toEqual({
      issues: [expect.stringContaining('"a": must be'), expect.stringContaining('"b": unknown key `cached` (did you mean `cachedInput`?)'), expect.stringContaining('"c": must be')],
    });
    expect(parsePriceTable([])).toEqual({ issues: [expect.stringContaining('JSON object')] });
  });
});

describe('what is left (/usage)', () => {
  const now = Date.UTC(2026, 11, 2, 20, 48);
  const resets = Date.UTC(2026, 11, 3);

  it('lists each limit set on a counter with what is used and left, never below 0, and skips counters without one', () => {
    expect(describeBudgetsLeft([
      { level: 'user', period: 'day', subject: 'telegram:42', usedUsd: 0.42, usedTokens: 3000, limitUsd: 2, limitTokens: 2000, resetsAtMs: resets },
      { level: 'chat', period: 'day', subject: 'telegram:42', usedUsd: 0.42, usedTokens: 3000, resetsAtMs: resets },
      { level: 'deployment', period: 'month', subject: 'all', usedUsd: 12.5, usedTokens: 0, limitUsd: 100, resetsAtMs: Date.UTC(2027, 0, 1) },
    ], now, 'UTC')).toEqual([
      'You, today: $0.42 of $2.00 used, $1.58 left; resets at 00:00 UTC, in 3 h 12 min',
      'You, today: 3,000 of 2,000 tokens used, 0 tokens left; resets at 00:00 UTC, in 3 h 12 min',
      'This bot, this month: $12.50 of $100.00 used, $87.50 left; resets at 00:00 UTC, in 29 d 3 h',
    ]);
  });

  it('never shows a made-up $0 for calls of a model with no price: their tokens are named', () => {
    const counter = { level: 'user' as const, period: 'day' as const, subject: 'telegram:42', usedUsd: 0, usedTokens: 1234, unpricedTokens: 1234, limitUsd: 0.01, resetsAtMs: resets };
    expect(describeBudgetsLeft([counter], now, 'UTC')).toEqual(['You, today: $0.00 of $0.01 used and 1,234 tokens at no known price, $0.01 left; resets at 00:00 UTC, in 3 h 12 min']);
    expect(limitsLeft(counter).map(formatUsed)).toEqual(['$0.00 + 1,234 tokens at no known price']);
  });

  it.each([[0, '$0.00'], [0.011, '$0.011'], [0.0001, '$0.0001'], [0.12345, '$0.123'], [9.989, '$9.99'], [2, '$2.00']])('formats %s USD as %s', (usd, text) => {
    expect(formatAmount('usd', usd)).toBe(text);
  });

  it('prices a transcription by the minute for known models only', () => {
    expect(transcriptionMicroUsd('whisper-1', 60)).toBe(6000);
    expect(transcriptionMicroUsd('openai/gpt-4o-mini-transcribe', 30)).toBe(1500);
    expect(transcriptionMicroUsd('my-local-whisper', 60)).toBeUndefined();
  });
});
