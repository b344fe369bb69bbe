/**
 * The overview page (`/overview`), the page an operator opens first: spend today, in 7 and in 30
 * days, a chart of cost and tokens a day, the top users, chats and models by cost, what compaction
 * was worth and how full the budgets are. Dependency-free HTML, CSS and JS served inline (the chart
 * is SVG drawn in the page); it reads `api/usage/overview` (relative, so the monitor may be mounted
 * under a prefix) and links to the sessions dashboard. One column on a phone, where the chart is
 * drawn at its section's width so its text stays 12 CSS px.
 */
import { formatMoney } from '../core/money.js';

/** Options of {@link renderOverviewPage}. */
export interface OverviewPageOptions {
  /** How often the page refreshes, ms. Default 30000. */
  pollMs?: number;
}

const STYLE = `
:root{color-scheme:light dark;--bg:#f6f7f9;--panel:#fff;--ink:#1d232b;--muted:#6b7480;--line:#dde1e6;--soft:#eef0f3;--cost:#2563eb;--tokens:#d97706;--bar:#1d232b;--link:#9cc3ff;--warn:#b42318}
@media (prefers-color-scheme:dark){:root{--bg:#15181c;--panel:#22272e;--ink:#e6e9ed;--muted:#98a1ad;--line:#343b44;--soft:#2b313a;--cost:#6ea8ff;--tokens:#f0a23b;--bar:#0e1114;--warn:#ff6b5e}}
*{box-sizing:border-box}body{font:14px/1.4 system-ui,sans-serif;margin:0;background:var(--bg);color:var(--ink)}
header{background:var(--bar);color:#fff;padding:10px 14px;display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center}
header h1{font-size:16px;margin:0}header a{color:var(--link)}header nav{margin-left:auto;display:flex;gap:14px}
main{padding:12px;display:grid;gap:12px;min-width:0;max-width:1100px}
section{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:12px;min-width:0}
h2{font-size:15px;margin:0 0 8px}.muted{color:var(--muted)}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(180px,1fr));gap:12px}
.card .money{font-size:22px;font-weight:600;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:12px}
table{border-collapse:collapse;width:100%;table-layout:fixed}th,td{text-align:left;padding:4px 6px;border-bottom:1px solid var(--soft);overflow-wrap:anywhere}
td.id{overflow-wrap:normal;overflow:hidden;text-overflow:ellipsis}th.share{width:34%}
th{font-weight:600;color:var(--muted)}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
#usage-chart{display:block;max-width:100%}svg text{font-size:12px;fill:var(--muted)}
.cost-bar{fill:var(--cost)}.tokens-line{stroke:var(--tokens);fill:none;stroke-width:2}.grid-line{stroke:var(--soft)}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:var(--muted)}.key{display:inline-block;width:12px;height:10px;margin-right:4px}
.k-cost{background:var(--cost)}.k-tokens{height:0;border-top:2px solid var(--tokens)}
.bar{display:block;height:8px;background:var(--soft);border-radius:4px;overflow:hidden;margin-bottom:2px}.bar i{display:block;height:100%;background:var(--cost)}
.bar[data-state=near] i{background:var(--tokens)}.bar[data-state=over] i{background:var(--warn)}
.full{color:var(--warn);font-weight:600}#error{color:var(--warn);margin:0}#error:empty{display:none}
@media (max-width:600px){main{padding:8px}section{padding:8px}th,td{padding:3px 4px}.cards{grid-template-columns:1fr}}`;

const SCRIPT = `
const POLL_MS = __POLL_MS__;
const token = new URLSearchParams(location.search).get('token');
const headers = token ? { Authorization: 'Bearer ' + token } : {};
const $ = (id) => document.getElementById(id);
${formatMoney.toString()}
function el(tag, attrs, ...children) {
  const node = attrs && attrs.svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (k !== 'svg') node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}
const int = (n) => Number(n).toLocaleString('en-US');
const tokens = (f) => f.inputTokens + f.cachedTokens + f.outputTokens;
const money = (f) => formatMoney(f.costUsd, f.unpricedCalls);
// An id may break after a ':' only ("api:alice:default"); a longer part ends in an ellipsis, the title has it all.
function idCell(text) {
  const parts = String(text).split(':');
  const td = el('td', { class: 'id', title: text });
  parts.forEach((part, k) => { if (k > 0) td.append(':', document.createElement('wbr')); td.append(part); });
  return td;
}
function card(id, title, span) {
  const f = span.totals;
  return el('section', { class: 'card', id: id, 'data-since': span.since },
    el('h2', {}, title), el('div', { class: 'money', 'data-cost': f.costUsd }, money(f)),
    el('div', { class: 'muted', 'data-tokens': tokens(f) }, int(tokens(f)) + ' tokens · ' + int(f.calls) + (f.calls === 1 ? ' call' : ' calls')));
}
// Drawn at the width of its section in CSS pixels, so its text is 12 px on a phone as on a desktop.
function chart(series, width) {
  // Without any cost the scale is a cent, not a billionth of a dollar.
  const maxCost = Math.max(0, ...series.map((p) => p.figures.costUsd)) || 0.01;
  const maxTokens = Math.max(1, ...series.map((p) => tokens(p.figures)));
  const ticks = [0, 0.5, 1].map((s) => ({ s, cost: formatMoney(maxCost * s, 0), tokens: int(Math.round(maxTokens * s)) }));
  // Margins as wide as the longest axis label (about 7 px a character of 12 px text).
  const margin = (texts) => 10 + 7 * Math.max(...texts.map((t) => t.length));
  const W = Math.max(240, Math.round(width)), H = W < 480 ? 180 : 220, L = margin(ticks.map((t) => t.cost)), R = margin(ticks.map((t) => t.tokens)), T = 12, B = 26, n = Math.max(1, series.length);
  const slot = (W - L - R) / n, y = (share) => T + (1 - share) * (H - T - B);
  const svg = el('svg', { svg: 1, id: 'usage-chart', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'cost and tokens a day, last 30 days' });
  for (const t of ticks) {
    svg.append(el('line', { svg: 1, class: 'grid-line', x1: L, x2: W - R, y1: y(t.s), y2: y(t.s) }));
    svg.append(el('text', { svg: 1, x: L - 4, y: y(t.s) + 4, 'text-anchor': 'end' }, t.cost));
    svg.append(el('text', { svg: 1, x: W - R + 4, y: y(t.s) + 4 }, t.tokens));
  }
  series.forEach((p, i) => {
    const h = (p.figures.costUsd / maxCost) * (H - T - B);
    const bar = el('rect', { svg: 1, class: 'cost-bar', x: L + i * slot + slot * 0.15, y: y(0) - h, width: slot * 0.7, height: h, 'data-day': p.label });
    bar.append(el('title', { svg: 1 }, p.label + ': ' + money(p.figures) + ', ' + int(tokens(p.figures)) + ' tokens'));
    svg.append(bar);
  });
  svg.append(el('polyline', { svg: 1, class: 'tokens-line', points: series.map((p, i) => (L + (i + 0.5) * slot).toFixed(1) + ',' + y(tokens(p.figures) / maxTokens).toFixed(1)).join(' ') }));
  if (series.length > 0) {
    svg.append(el('text', { svg: 1, x: L, y: H - 8 }, series[0].label));
    svg.append(el('text', { svg: 1, x: W - R, y: H - 8, 'text-anchor': 'end' }, series[series.length - 1].label));
  }
  return svg;
}
function topTable(id, title, groups, noun) {
  const rows = groups.map((g) => el('tr', {}, idCell(g.key || '(no user)'), el('td', { class: 'num' }, money(g.figures)), el('td', { class: 'num' }, int(tokens(g.figures)))));
  return el('section', { id: id }, el('h2', {}, title), el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, noun), el('th', { class: 'num' }, 'cost'), el('th', { class: 'num' }, 'tokens'))),
    el('tbody', {}, ...(rows.length ? rows : [el('tr', {}, el('td', { colspan: 3, class: 'muted' }, 'no usage in the last 7 days'))]))));
}
// Blocked and unreadable markers, then fullest first (the API's order); red from 100 % or blocked, amber from the notice share.
function budgets(b) {
  if (b.rows.length === 0) return [el('p', { class: 'muted' }, 'No budgets set (CHATGATE_BUDGET_* options, docs/operating.md).')];
  const rows = b.rows.map((r) => {
    const state = r.blocked || r.share >= 1 ? 'over' : r.share >= b.noticeShare ? 'near' : 'ok';
    const blocked = r.blocked ? [el('br'), el('span', { class: 'blocked' }, r.blocked === 'no room' ? 'blocked: no room for another call' : 'blocked: used up')]
      : r.markerUnreadable ? [el('br'), el('span', { class: 'blocked' }, r.markerUnreadable)] : [];
    return el('tr', { class: state === 'over' ? 'full' : '', 'data-share': r.share, ...(r.blocked ? { 'data-blocked': r.blocked } : {}), ...(r.markerUnreadable ? { 'data-marker': 'unreadable' } : {}) },
      idCell(r.level + (r.subject && r.level !== 'deployment' ? ' ' + r.subject : '') + ', per ' + r.period), el('td', {}, r.usedText, ...blocked),
      el('td', {}, el('span', { class: 'bar', role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': Math.min(100, Math.floor(r.share * 100)), 'data-state': state },
        el('i', { style: 'width:' + Math.min(100, r.share * 100).toFixed(1) + '%' })), r.percentText));
  });
  const table = el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'limit'), el('th', {}, 'used'), el('th', { class: 'share' }, 'full'))), el('tbody', {}, ...rows));
  const note = b.more > 0 ? b.more + ' more with a limit, less full: chatgate budgets list shows every one.' : 'chatgate budgets list shows every limit and what is left.';
  return [table, el('p', { class: 'muted', id: 'budgets-more' }, note)];
}
let last, drawnWidth = 0;
function render(o) {
  last = o;
  $('cards').replaceChildren(card('today', 'Today', o.today), card('week', 'Last 7 days', o.week), card('month', 'Last 30 days', o.month));
  $('chart').replaceChildren(el('h2', {}, 'Cost and tokens a day (30 days, UTC)'), chart(o.series, drawnWidth = chartWidth()),
    el('div', { class: 'legend' }, el('span', {}, el('i', { class: 'key k-cost' }), 'cost'), el('span', {}, el('i', { class: 'key k-tokens' }), 'tokens')));
  $('tops').replaceChildren(topTable('top-users', 'Top users (7 days)', o.top.user, 'user'), topTable('top-chats', 'Top chats (7 days)', o.top.chat, 'chat'), topTable('top-models', 'Top models (7 days)', o.top.model, 'model'));
  $('compaction-sentence').textContent = o.compaction.sentence.charAt(0).toUpperCase() + o.compaction.sentence.slice(1) + '.';
  $('compaction-chats').replaceChildren(...o.compaction.chats.map((g) => el('li', {}, g.key + ': spent ' + (g.figures.compactionSpent.calls ? formatMoney(g.figures.compactionSpent.costUsd, g.figures.compactionSpent.unpricedCalls) : '$0.00')
    + ', saved ' + formatMoney(g.figures.compactionSaved.costUsd, g.figures.compactionSaved.unpricedTokens) + ' (' + int(g.figures.compactionSaved.tokens) + ' prompt tokens)')));
  $('budgets').replaceChildren(el('h2', {}, 'Budgets, fullest first'), ...budgets(o.budgets));
  $('updated').textContent = 'updated ' + new Date(o.generatedAtMs).toISOString().slice(11, 19) + ' UTC';
}
function chartWidth() {
  const box = $('chart'), style = getComputedStyle(box);
  return box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
}
addEventListener('resize', () => {
  const width = chartWidth();
  if (!last || Math.abs(width - drawnWidth) < 1) return;
  drawnWidth = width;
  $('usage-chart').replaceWith(chart(last.series, width));
});
async function refresh() {
  try {
    const res = await fetch('api/usage/overview', { headers });
    if (!res.ok) throw new Error('api/usage/overview: ' + res.status);
    render(await res.json());
    $('error').textContent = '';
    document.body.dataset.ready = '1';
  } catch (err) { $('error').textContent = String(err.message || err); }
}
$('sessions-link').href = 'dashboard' + location.search;
refresh();
setInterval(refresh, POLL_MS);
`;

/** The overview page's HTML. */
export function renderOverviewPage(options: OverviewPageOptions = {}): string {
  const script = SCRIPT.replace('__POLL_MS__', String(options.pollMs ?? 30_000));
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>chatgate overview</title><style>${STYLE}</style></head>
<body><header><h1>chatgate · usage</h1><span id="updated" class="muted"></span>
<nav><a id="sessions-link" href="dashboard">Status and sessions</a></nav></header>
<main><p id="error" role="alert"></p>
<div id="cards" class="cards"></div>
<section id="chart"></section>
<div id="tops" class="grid"></div>
<div class="grid"><section id="compaction"><h2>What compaction was worth</h2><p id="compaction-sentence"></p><ul id="compaction-chats"></ul>
<p class="muted">Saved: the prompt tokens compactions removed, at the model's input price, counted once (each later call would have sent them again).</p></section>
<section id="budgets"></section></div>
</main><script>${script}</script></body></html>`;
}
