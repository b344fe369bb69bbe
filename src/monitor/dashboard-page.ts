/**
 * The dashboard page: dependency-free HTML and JS served inline. It polls `api/sessions` and, for
 * the open session, `api/sessions/:id` (relative URLs, so the monitor may be mounted under a prefix).
 */

/** Options of {@link renderDashboardPage}. */
export interface DashboardPageOptions {
  /** How often the page refreshes, ms. Default 3000. */
  pollMs?: number;
  /** Page title. Default `chatgate monitor`. */
  title?: string;
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d232b}
header{background:#1d232b;color:#fff;padding:10px 18px;display:flex;gap:16px;align-items:center}
header h1{font-size:16px;margin:0}main{padding:14px 18px;display:grid;gap:16px}
section{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:12px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eef0f3}
th{font-weight:600;color:#5a6472}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr.row{cursor:pointer}tbody tr.row:hover,tbody tr.selected{background:#eaf2ff}
h2{font-size:15px;margin:0 0 8px}pre{white-space:pre-wrap;background:#f6f7f9;padding:8px;max-height:260px;overflow:auto}
.muted{color:#7a8491}.grid{display:grid;grid-template-columns:1fr 1fr;gap:16px}
svg text{font-size:11px;fill:#5a6472}.paused{color:#b42318;font-weight:600}`;

const SCRIPT = `
const POLL_MS = __POLL_MS__;
const token = new URLSearchParams(location.search).get('token');
const headers = token ? { Authorization: 'Bearer ' + token } : {};
const state = { sort: 'lastActivity', selected: decodeURIComponent((location.hash.match(/session=([^&]+)/) || [])[1] || '') || null };
const $ = (id) => document.getElementById(id);
function el(tag, attrs, ...children) {
  const node = attrs && attrs.svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (k !== 'svg') node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}
const pct = (f) => (f * 100).toFixed(1) + '%';
const int = (n) => Number(n).toLocaleString('en-US');
const usd = (n) => '$' + Number(n).toFixed(4);
const when = (ms) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
async function getJson(url) {
  const res = await fetch(url, { headers });
  if (!res.ok) throw new Error(url + ': ' + res.status);
  return res.json();
}
function cell(v, num) { return el('td', num ? { class: 'num' } : {}, v); }
function renderSessions(page) {
  const body = $('sessions-body');
  body.replaceChildren(...page.items.map((s) => {
    const tr = el('tr', { class: 'row' + (s.id === state.selected ? ' selected' : ''), 'data-session': s.id },
      cell(s.id), cell(s.channel), cell(int(s.messages), 1), cell(pct(s.fill), 1),
      cell(int(s.promptTokens), 1), cell(int(s.completionTokens), 1), cell(usd(s.costUsd), 1),
      cell(int(s.compactions), 1), cell(when(s.lastActivityAt)));
    tr.addEventListener('click', () => openSession(s.id));
    return tr;
  }));
  $('sessions-total').textContent = page.total + ' session(s)';
}
function chart(d) {
  const W = 640, H = 240, L = 44, R = 12, T = 12, B = 28;
  const pts = d.fillHistory;
  const maxTurn = Math.max(1, ...pts.map((p) => p.turn), ...d.compactions.map((c) => c.turn));
  const win = d.session.contextWindow || 1;
  const x = (t) => L + ((t - 1) / Math.max(1, maxTurn - 1)) * (W - L - R);
  const y = (f) => T + (1 - Math.min(1, Math.max(0, f))) * (H - T - B);
  const svg = el('svg', { svg: 1, id: 'fill-chart', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img' });
  for (const f of [0, 0.25, 0.5, 0.75, 1]) {
    svg.append(el('line', { svg: 1, x1: L, x2: W - R, y1: y(f), y2: y(f), stroke: '#eef0f3' }));
    svg.append(el('text', { svg: 1, x: 4, y: y(f) + 4 }, pct(f).replace('.0', '')));
  }
  const lines = [['compress', d.thresholds.compress, '#d97706'], ['hygiene', d.thresholds.hygiene, '#b42318']];
  for (const [name, f, color] of lines) {
    svg.append(el('line', { svg: 1, class: 'threshold threshold-' + name, x1: L, x2: W - R, y1: y(f), y2: y(f), stroke: color, 'stroke-dasharray': '6 4' }));
    svg.append(el('text', { svg: 1, x: W - R - 90, y: y(f) - 4 }, name + ' ' + pct(f).replace('.0', '')));
  }
  if (pts.length > 0) {
    const path = pts.map((p) => x(p.turn).toFixed(1) + ',' + y(p.fill).toFixed(1)).join(' ');
    svg.append(el('polyline', { svg: 1, class: 'fill-line', points: path, fill: 'none', stroke: '#2563eb', 'stroke-width': 2 }));
  }
  for (const c of d.compactions) {
    const g = el('g', { svg: 1, class: 'compaction-marker', 'data-layer': c.layer, 'data-outcome': c.outcome });
    g.append(el('line', { svg: 1, x1: x(c.turn), x2: x(c.turn), y1: y(c.tokensBefore / win), y2: y(c.tokensAfter / win), stroke: '#7c3aed', 'stroke-width': 2 }));
    g.append(el('circle', { svg: 1, cx: x(c.turn), cy: y(c.tokensAfter / win), r: 5, fill: '#7c3aed' }));
    g.append(el('title', { svg: 1 }, c.layer + ' ' + c.outcome + ': ' + int(c.tokensBefore) + ' → ' + int(c.tokensAfter) + ' tokens (turn ' + c.turn + ')'));
    svg.append(g);
  }
  svg.append(el('text', { svg: 1, x: L, y: H - 8 }, 'turn 1'));
  svg.append(el('text', { svg: 1, x: W - R - 50, y: H - 8 }, 'turn ' + maxTurn));
  return svg;
}
function kv(rows) { return el('table', {}, el('tbody', {}, ...rows.map(([k, v]) => el('tr', {}, el('th', {}, k), cell(v, 1))))); }
function renderDetail(d) {
  const s = d.session, l = d.ledger;
  const byLayer = Object.entries(l.compactionsByLayer).map(([layer, o]) => layer + ': ' + Object.entries(o).map(([k, v]) => k + ' ' + v).join(', ')).join('; ');
  const timeline = el('table', { id: 'compaction-timeline' }, el('thead', {}, el('tr', {}, ...['turn', 'when', 'layer', 'outcome', 'before', 'after', 'ms'].map((h) => el('th', {}, h)))),
    el('tbody', {}, ...d.compactions.map((c) => el('tr', {}, cell(c.turn, 1), cell(when(c.at)), cell(c.layer), cell(c.outcome), cell(int(c.tokensBefore), 1), cell(int(c.tokensAfter), 1), cell(int(c.durationMs), 1)))));
  $('detail').replaceChildren(
    el('h2', {}, s.id, s.paused ? el('span', { class: 'paused' }, '  (automatic compaction paused)') : ''),
    el('p', { class: 'muted' }, 'context ' + int(s.contextTokens) + ' / ' + int(s.contextWindow) + ' tokens (' + pct(s.fill) + ')'),
    d.failed > 0 ? el('p', { id: 'failed', class: 'paused' }, int(d.failed) + ' failed message' + (d.failed === 1 ? '' : 's') + ' (chatgate failed ' + s.id + ' lists them, chatgate retry ' + s.id + ' re-queues them)') : '',
    chart(d),
    el('div', { class: 'grid' },
      el('div', { id: 'ledger' }, el('h2', {}, 'Usage ledger'), kv([['prompt tokens', int(l.promptTokens)], ['completion tokens', int(l.completionTokens)],
        ['cached tokens', int(l.cachedTokens)], ['model calls', int(l.calls)], ['estimated cost', usd(l.costUsd)], ['compactions', int(l.compactions)],
        ['by layer', byLayer || '—'], ['tokens removed', int(l.tokensRemoved)], ['last prompt', int(l.lastPromptTokens)]])),
      el('div', {}, el('h2', {}, 'Pinned facts'), el('ul', { id: 'pinned' }, ...d.pinnedFacts.map((f) => el('li', {}, f))),
        el('h2', {}, 'Notes'), el('ul', { id: 'notes' }, ...d.notes.map((n) => el('li', {}, n.key + ': ' + n.text))))),
    el('h2', {}, 'Compactions'), timeline,
    el('h2', {}, 'Current summary'), el('pre', { id: 'summary' }, d.summary || '(none yet)'));
}
async function refreshList() {
  renderSessions(await getJson('api/sessions?limit=200&sort=' + state.sort));
}
async function refreshDetail() {
  if (!state.selected) return;
  const d = await getJson('api/sessions/' + encodeURIComponent(state.selected));
  renderDetail(d);
}
function openSession(id) {
  state.selected = id;
  history.replaceState(null, '', location.search + '#session=' + encodeURIComponent(id));
  for (const tr of document.querySelectorAll('#sessions-body tr')) tr.classList.toggle('selected', tr.dataset.session === id);
  refreshDetail().catch(showError);
}
function showError(err) { $('status').textContent = String(err.message || err); }
async function tick() {
  try { await refreshList(); await refreshDetail(); $('status').textContent = 'updated ' + new Date().toLocaleTimeString(); }
  catch (err) { showError(err); }
}
$('sort').addEventListener('change', (e) => { state.sort = e.target.value; tick(); });
tick();
setInterval(tick, POLL_MS);
`;

/** The dashboard's HTML (one page, inline CSS and JS, no external requests). */
export function renderDashboardPage(options: DashboardPageOptions = {}): string {
  const pollMs = Math.max(250, options.pollMs ?? 3000);
  const title = escapeHtml(options.title ?? 'chatgate monitor');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title}</title><style>${STYLE}</style></head>
<body><header><h1>${title}</h1><label>sort by <select id="sort"><option value="lastActivity">last activity</option>
<option value="fill">context fill</option></select></label><span id="sessions-total" class="muted"></span>
<span id="status" class="muted"></span><a href="admin/queues" style="color:#9cc3ff;margin-left:auto">queues</a></header>
<main><section><h2>Sessions</h2><table id="sessions"><thead><tr><th>session</th><th>channel</th><th class="num">messages</th>
<th class="num">context fill</th><th class="num">tokens in</th><th class="num">tokens out</th><th class="num">cost</th>
<th class="num">compactions</th><th>last activity (UTC)</th></tr></thead><tbody id="sessions-body"></tbody></table></section>
<section id="detail"><p class="muted">Select a session to see its context fill, compactions and usage.</p></section></main>
<script>${SCRIPT.replace('__POLL_MS__', String(pollMs))}</script></body></html>`;
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
