import { describe, expect, it } from 'vitest';
import { alignMoneyColumn, toUsageFigures } from '../../src/usage/figures.js';
import { formatMoney } from '../../src/core/money.js';
import { formatUsageReport } from '../../src/usage/format.js';
import type { UsageReport } from '../../src/usage/read-model.js';
import { zeroFigures } from '../../src/usage/rollup-format.js';

describe('formatMoney, the one rule of every surface', () => {
  it.each([
    [0, '$0.00'], [0.000001, '$0.000001'], [0.005, '$0.005'], [0.0096, '$0.0096'], [0.0108, '$0.0108'], [0.0136, '$0.0136'],
    [0.024, '$0.024'], [0.0244, '$0.0244'], [0.1, '$0.10'], [0.123_4, '$0.123'], [0.5, '$0.50'], [0.999_6, '$1.00'], [1, '$1.00'], [12.345, '$12.35'],
  ])('%d reads %s', (usd, text) => {
    expect(formatMoney(usd, 0)).toBe(text);
  });

  it('keeps two different small amounts apart, and says when a price is unknown', () => {
    expect(formatMoney(0.0108, 0)).not.toBe(formatMoney(0.0136, 0));
    expect(formatMoney(0, 2)).toBe('price unknown');
    expect(formatMoney(0.0133, 1)).toBe('$0.0133 + price unknown');
  });
});

describe('money columns of a table', () => {
  it('line up their decimal points', () => {
    expect(alignMoneyColumn(['$12.34', '$0.0108', 'price unknown', '-', '$0.50'])).toEqual(['$12.34  ', '$0.0108', 'price unknown', '-', '$0.50  ']);
  });

  it('chatgate usage prints one rule in every money column, aligned', () => {
    const figures = (micro: number) => toUsageFigures({ ...zeroFigures(), calls: 1, in: 1000, cost: micro });
    const report: UsageReport = {
      format: 1, since: '7d', span: 'in the last 7 days', period: 'day', fromMs: Date.UTC(2026, 11, 1), untilMs: Date.UTC(2026, 11, 2), by: 'user',
      totals: figures(1_024_400), groups: [{ key: 'web:a', figures: figures(1_000_000) }, { key: 'web:b', figures: figures(13_600) }, { key: 'web:c', figures: figures(10_800) }], series: [],
    };
    const lines = formatUsageReport(report).split('\n').slice(2, 6);
    expect(lines.map((line) => /\$[\d.]+/.exec(line)![0])).toEqual(['$1.00', '$0.0136', '$0.0108', '$1.02']);
    // The cost column is the first with a decimal point: at one place on every line.
    expect(new Set(lines.map((line) => line.indexOf('.'))).size).toBe(1);
  });
});
