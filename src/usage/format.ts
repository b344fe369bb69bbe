/**
 * A usage report as text (a table for people) and CSV (for spreadsheets), pure. JSON is the
 * report itself. Cost cells say "price unknown" where no price was known, never $0.
 */
import { alignMoneyColumn, compactionSentence, type UsageFigures } from './figures.js';
import { formatMoney } from '../core/money.js';
import type { UsageReport } from './read-model.js';

const COLUMNS = ['calls', 'tokens in', 'cached', 'tokens out', 'cost', 'compactions', 'compaction spent', 'compaction saved'] as const;
/** The money columns of a table line (the group key is column 0). */
const MONEY_COLUMNS = [5, 7, 8] as const;

/** The report as a table: one line a group (highest cost first), the total, and what compaction was worth. */
export function formatUsageReport(report: UsageReport): string {
  const title = `Usage ${report.span} (from ${new Date(report.fromMs).toISOString().slice(0, 16).replace('T', ' ')} UTC, by ${report.period}), by ${report.by}`;
  if (report.totals.calls === 0 && report.totals.compactions === 0) return `${title}\n(no usage)`;
  const header = [report.by, ...COLUMNS];
  const lines = alignMoney([...report.groups.map((g) => [keyText(g.key), ...cells(g.figures)]), ['total', ...cells(report.totals)]]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((line) => line[i]!.length)));
  const render = (line: readonly string[]) => line.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ').trimEnd();
  return [title, render(header), ...lines.map(render), '', `${capitalise(compactionSentence(report.totals, report.span))}.`].join('\n');
}

/**
 * The report as CSV: a header, one row a group, then `total`. USD cells are empty where the price
 * is unknown (`unpriced_calls` says how many calls that was).
 */
export function formatUsageCsv(report: UsageReport): string {
  const header = [report.by, 'calls', 'input_tokens', 'cached_tokens', 'output_tokens', 'cost_usd', 'unpriced_calls', 'compactions', 'tokens_removed', 'compaction_spent_usd', 'compaction_saved_usd'];
  const row = (key: string, f: UsageFigures) => [
    key, f.calls, f.inputTokens, f.cachedTokens, f.outputTokens, usdCell(f.costUsd, f.unpricedCalls), f.unpricedCalls, f.compactions, f.tokensRemoved,
    usdCell(f.compactionSpent.costUsd, f.compactionSpent.unpricedCalls), usdCell(f.compactionSaved.costUsd, f.compactionSaved.unpricedTokens),
  ].map((cell) => csvCell(String(cell))).join(',');
  return [header.join(','), ...report.groups.map((g) => row(g.key, g.figures)), row('total', report.totals)].join('\n');
}

/** A group key for people: usage no user asked for (gateway hygiene, the CLI) reads "(no user)". */
export function keyText(key: string): string {
  return key === '' ? '(no user)' : key;
}

function cells(f: UsageFigures): string[] {
  return [
    int(f.calls), int(f.inputTokens), int(f.cachedTokens), int(f.outputTokens), formatMoney(f.costUsd, f.unpricedCalls), int(f.compactions),
    f.compactionSpent.calls === 0 ? '-' : formatMoney(f.compactionSpent.costUsd, f.compactionSpent.unpricedCalls),
    f.compactions === 0 ? '-' : formatMoney(f.compactionSaved.costUsd, f.compactionSaved.unpricedTokens),
  ];
}

/** Lines up the decimal points of the money columns. */
function alignMoney(lines: string[][]): string[][] {
  for (const column of MONEY_COLUMNS) {
    const aligned = alignMoneyColumn(lines.map((line) => line[column]!));
    lines.forEach((line, k) => { line[column] = aligned[k]!; });
  }
  return lines;
}

function int(n: number): string {
  return n.toLocaleString('en-US');
}

function usdCell(usd: number, unknown: number): string {
  return unknown > 0 && usd === 0 ? '' : usd.toFixed(6);
}

function csvCell(text: string): string {
  return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
