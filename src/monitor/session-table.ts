import { countOf } from '../core/plural.js';
import { describeContext, formatShare, formatTokens } from '../core/session-figures.js';
import type { SessionDetail, SessionRow } from '../core/session-view.js';
import { alignMoneyColumn } from '../usage/figures.js';
import { formatMoney } from '../core/money.js';

/**
 * Plain-text views of sessions for the CLI (`chatgate sessions`, `chatgate usage <session>`): the
 * same figures as the dashboard, aligned in columns. Pure functions.
 */

const COLUMNS = ['session', 'channel', 'model', 'messages', 'fill', 'window', 'tokens in', 'tokens out', 'cost', 'compactions', 'last activity (UTC)'] as const;
const RIGHT_ALIGNED = new Set<string>(['messages', 'fill', 'window', 'tokens in', 'tokens out', 'cost', 'compactions']);

/** The sessions table: one line per row under a header; `(no sessions)` when empty. */
export function formatSessionsTable(rows: readonly SessionRow[]): string {
  if (rows.length === 0) return '(no sessions)';
  const cells = rows.map((row) => [
    row.paused ? `${row.id} (paused)` : row.id,
    row.channel,
    row.model,
    formatInt(row.messages),
    formatPercent(row.fill),
    formatInt(row.contextWindow),
    formatInt(row.promptTokens),
    formatInt(row.completionTokens),
    formatMoney(row.costUsd, row.unpricedCalls),
    formatInt(row.compactions),
    formatUtc(row.lastActivityAt),
  ]);
  const cost = COLUMNS.indexOf('cost');
  alignMoneyColumn(cells.map((line) => line[cost]!)).forEach((text, k) => { cells[k]![cost] = text; });
  const widths = COLUMNS.map((header, i) => Math.max(header.length, ...cells.map((line) => line[i]!.length)));
  const render = (line: readonly string[]) =>
    line.map((cell, i) => (RIGHT_ALIGNED.has(COLUMNS[i]!) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join('  ').trimEnd();
  return [render(COLUMNS), ...cells.map(render)].join('\n');
}

/** The usage report of one session: ledger, context fill against both triggers, compactions. */
export function formatSessionUsage(detail: SessionDetail): string {
  const { session: s, ledger: l } = detail;
  const byLayer = Object.entries(l.compactionsByLayer)
    .map(([layer, outcomes]) => `${layer} ${Object.entries(outcomes ?? {}).map(([o, n]) => `${o}=${n}`).join(' ')}`)
    .join('; ');
  const lines = [
    `session        ${s.id} (${s.channel}, ${detail.limits.model})${s.paused ? ' — automatic compaction paused' : ''}`,
    `context        ${describeContext(detail.context)}`,
    `tokens         prompt ${formatInt(l.promptTokens)} (cached ${formatInt(l.cachedTokens)}, ${formatShare(l.cacheShare)}), completion ${formatInt(l.completionTokens)}`,
    `model calls    ${formatInt(l.calls)}`,
    `cost           ${formatMoney(l.costUsd, l.unpricedCalls)}${l.costUsd > 0 ? ' (estimated)' : ''}`,
    `compactions    ${formatInt(l.compactions)}${byLayer ? ` (attempts: ${byLayer})` : ''}, ${countOf(l.tokensRemoved, 'token')} removed${l.resets > 0 ? `; ${formatInt(l.resets)} reset${l.resets === 1 ? '' : 's'}` : ''}`,
    `messages       ${formatInt(s.messages)}, last activity ${formatUtc(s.lastActivityAt)} UTC`,
  ];
  if (detail.pinnedFacts.length > 0) lines.push(`pinned facts   ${detail.pinnedFacts.join(', ')}`);
  return lines.join('\n');
}

const formatInt = formatTokens;
const formatPercent = formatShare;

function formatUtc(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}
