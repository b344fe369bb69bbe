/**
 * The dashboard page: dependency-free HTML and JS served inline. Its first screen is the status
 * `chatgate status` prints (`api/status`: checks, gateways and workers alive and dead), then the
 * channels and the sessions. It polls `api/status` and `api/channels` (each panel is hidden where
 * there is none), `api/sessions` and, for the open session, `api/sessions/:id` (relative URLs, so the monitor may be mounted under a prefix).
 */

import { formatMoney } from '../core/money.js';
import { CHART_SCRIPT } from './dashboard-chart.js';

/** Options of {@link renderDashboardPage}. */
export interface DashboardPageOptions {
  /** How often the page refreshes, ms. Default 3000. */
  pollMs?: number;
  /** Page title. Default `chatgate monitor`. */
  title?: string;
}

const STYLE = `
:root{color-scheme:light dark;--bg:#f6f7f9;--panel:#fff;--ink:#1d232b;--muted:#6b7480;--line:#dde1e6;--soft:#eef0f3;--sel:#eaf2ff;
--fill:#2563eb;--compress:#d97706;--hygiene:#b42318;--compaction:#7c3aed;--noop:#8a94a3;--bar:#1d232b;--link:#9cc3ff}
@media (prefers-color-scheme:dark){:root{--bg:#15181c;--panel:#22272e;--ink:#e6e9ed;--muted:#98a1ad;--line:#343b44;--soft:#2b313a;--sel:#1f3b57;
--fill:#6ea8ff;--compress:#f0a23b;--hygiene:#ff6b5e;--compaction:#b58cff;--noop:#7d8793;--bar:#0e1114}}
*{box-sizing:border-box}body{font:14px/1.4 system-ui,sans-serif;margin:0;background:var(--bg);color:var(--ink)}
header{background:var(--bar);color:#fff;padding:10px 14px;display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center}
header h1{font-size:16px;margin:0}header a{color:var(--link)}header nav{margin-left:auto;display:flex;gap:14px}main{padding:12px;display:grid;gap:12px;min-width:0}
section{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:12px;min-width:0}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--soft);white-space:nowrap}
th{font-weight:600;color:var(--muted)}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr.row{cursor:pointer}tbody tr.row:hover,tbody tr.selected{background:var(--sel)}
h2{font-size:15px;margin:0 0 8px;overflow-wrap:anywhere}pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--bg);padding:8px;max-height:260px;overflow:auto}
.muted{color:var(--muted)}.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:12px}
ul{padding-left:18px;overflow-wrap:anywhere}.paused{color:var(--hygiene);font-weight:600}
#fill-chart{width:100%;max-width:860px;height:auto;display:block}svg text{font-size:11px;fill:var(--muted)}
.grid-line{stroke:var(--soft)}.fill-line{stroke:var(--fill)}.threshold-compress{stroke:var(--compress)}.threshold-hygiene{stroke:var(--hygiene)}
.next-point{fill:none;stroke:var(--fill)}.next-line{stroke:var(--fill)}.compaction-marker circle{fill:var(--compaction)}
.compaction-noop circle{fill:none;stroke:var(--noop);stroke-width:1.5}.reset-marker line{stroke:var(--noop)}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:var(--muted);margin:6px 0 10px}
.legend-item{display:inline-flex;align-items:center;gap:5px}.key{display:inline-block;width:14px;height:0;border-top:2px solid}
.k-fill{border-color:var(--fill)}.k-next{width:8px;height:8px;border:2px solid var(--fill);border-radius:50%}
.k-compaction{width:9px;height:9px;border:0;border-radius:50%;background:var(--compaction)}
.k-noop{width:7px;height:7px;border:1.5px solid var(--noop);border-radius:50%}.k-reset{border-top:2px dotted var(--noop)}
.k-compress{border-top:2px dashed var(--compress)}.k-hygiene{border-top:2px dashed var(--hygiene)}
#ledger td,#tool-calls td{white-space:normal;overflow-wrap:anywhere}#tool-calls td.code{font-family:ui-monospace,monospace;font-size:12px}#channels td{white-space:normal;overflow-wrap:anywhere}
.state-disconnected,.state-connecting,.state-waiting,.verdict-down{color:var(--hygiene);font-weight:600}
.check-warn td:first-child,.check-warn .verdict{color:var(--compress);font-weight:600}.check-down td:first-child,.check-down .verdict{color:var(--hygiene);font-weight:600}
#status-checks td{white-space:normal;overflow-wrap:anywhere}#status-checks td:nth-child(-n+2){white-space:nowrap;overflow-wrap:normal}.fix{color:var(--muted);font-size:12px}.over-hygiene{background:color-mix(in srgb,var(--hygiene) 14%,transparent)}
.over-hygiene td.fill{color:var(--hygiene);font-weight:600}.dead{color:var(--hygiene)}
@media (max-width:600px){main{padding:8px}section{padding:8px}th,td{padding:3px 6px}#sessions .wide{display:none}}`;

const SCRIPT = `
const POLL_MS = __POLL_MS__;
const token = new URLSearchParams(location.search).get('token');
const headers = token ? { Authorization: 'Bearer ' + token } : {};
const state = { hygieneAt: null, sort: 'lastActivity', selected: decodeURIComponent((location.hash.match(/session=([^&]+)/) || [])[1] || '') || null };
const $ = (id) => document.getElementById(id);
function el(tag, attrs, ...children) {
  const node = attrs && attrs.svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (k !== 'svg') node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}
const pct = (f) => (f * 100).toFixed(1) + '%';
const int = (n) => Number(n).toLocaleString('en-US');
${formatMoney.toString()}
const usd = (n, unpriced) => formatMoney(Number(n), unpriced || 0);
const when = (ms) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
// The JSON at url. With a panel: null when this server has no such API (404: the panel is hidden), else the panel is shown.
async function getJson(url, panel) {
  const res = await fetch(url, { headers });
  if (panel && res.status === 404) { $(panel).hidden = true; return null; }
  if (!res.ok) throw new Error(url + ': ' + res.status);
  const body = await res.json();
  if (panel) $(panel).hidden = false;
  return body;
}
function cell(v, num) { return el('td', num ? { class: 'num' } : {}, v); }
function renderSessions(page) {
  const body = $('sessions-body');
  body.replaceChildren(...page.items.map((s) => {
    const over = state.hygieneAt !== null && s.fill >= state.hygieneAt;
    const wide = (v) => el('td', { class: 'num wide' }, v);
    const tr = el('tr', { class: 'row' + (s.id === state.selected ? ' selected' : '') + (over ? ' over-hygiene' : ''), 'data-session': s.id },
      cell(s.id), el('td', { class: 'wide' }, s.channel), wide(int(s.messages)), el('td', { class: 'num fill', title: over ? 'at or over the hygiene line' : '' }, pct(s.fill)), wide(int(s.contextWindow)),
      wide(int(s.promptTokens)), wide(int(s.completionTokens)), wide(usd(s.costUsd, s.unpricedCalls)),
      wide(int(s.compactions)), el('td', { class: 'wide' }, when(s.lastActivityAt)));
    tr.addEventListener('click', () => openSession(s.id));
    return tr;
  }));
  $('sessions-total').textContent = page.total + ' session(s)';
}
__CHART__
function kv(rows) { return el('div', { class: 'scroll' }, el('table', {}, el('tbody', {}, ...rows.map(([k, v]) => el('tr', {}, el('th', {}, k), cell(v, 1)))))); }
function renderDetail(d) {
  const s = d.session, l = d.ledger, c = d.context;
  const byLayer = Object.entries(l.compactionsByLayer).map(([layer, o]) => layer + ': ' + Object.entries(o).map(([k, v]) => k + ' ' + v).join(', ')).join('; ');
  const events = [...d.compactions.map((e) => ({ ...e, kind: 'compaction' })), ...d.resets.map((e) => ({ ...e, kind: 'reset' }))].sort((a, b) => a.at - b.at);
  const timeline = el('div', { class: 'scroll' }, el('table', { id: 'compaction-timeline' }, el('thead', {}, el('tr', {}, ...['turn', 'when', 'layer', 'outcome', 'request before', 'request after', 'ms'].map((h) => el('th', {}, h)))),
    el('tbody', {}, ...events.map((e) => e.kind === 'reset'
      ? el('tr', { class: 'reset' }, cell(e.turn, 1), cell(when(e.at)), cell('reset'), cell(e.removedMessages + (e.removedMessages === 1 ? ' message left' : ' messages left')), cell('', 1), cell('', 1), cell('', 1))
      : el('tr', { class: 'outcome-' + e.outcome }, cell(e.turn, 1), cell(when(e.at)), cell(e.layer), cell(e.outcome), cell(int(e.requestTokensBefore), 1), cell(int(e.requestTokensAfter), 1), cell(int(e.durationMs), 1))))));
  $('detail').replaceChildren(
    el('h2', {}, s.id, s.paused ? el('span', { class: 'paused' }, '  (automatic compaction paused)') : ''),
    el('p', { id: 'context', class: 'muted' }, 'next request ' + int(c.tokens) + ' of ' + int(c.usableWindow) + ' tokens (' + pct(c.fill) + '); window ' + int(c.contextWindow)
      + (c.reservedOutputTokens > 0 ? ', ' + int(c.reservedOutputTokens) + ' reserved for the answer' : '') + '; model ' + d.limits.model),
    d.failed > 0 ? el('p', { id: 'failed', class: 'paused' }, int(d.failed) + ' failed message' + (d.failed === 1 ? '' : 's') + ' (chatgate failed ' + s.id + ' lists them, chatgate retry ' + s.id + ' re-queues them)') : '',
    chart(d), legend(),
    el('div', { class: 'grid' },
      el('div', { id: 'ledger' }, el('h2', {}, 'Usage ledger'), kv([['prompt tokens', int(l.promptTokens)], ['completion tokens', int(l.completionTokens)],
        ['cached tokens', int(l.cachedTokens)], ['cache share', (l.cacheShare * 100).toFixed(1) + '%'], ['model calls', int(l.calls)], ['estimated cost', usd(l.costUsd, l.unpricedCalls)], ['compactions', int(l.compactions)],
        ['attempts by layer', byLayer || '—'], ['resets', int(l.resets)], ['tokens removed', int(l.tokensRemoved)], ['last prompt', int(l.lastPromptTokens)]])),
      el('div', {}, el('h2', {}, 'Pinned facts'), el('ul', { id: 'pinned' }, ...d.pinnedFacts.map((f) => el('li', {}, f))),
        el('h2', {}, 'Notes'), el('ul', { id: 'notes' }, ...d.notes.map((n) => el('li', {}, n.key + ': ' + n.text))),
        el('h2', {}, 'Always approved'), el('ul', { id: 'grants' }, ...(d.grants || []).map((g) => el('li', {}, g.tool + ' (by ' + g.by.userName + ', ' + when(g.atMs) + ')'))))),
    el('h2', {}, 'Tool approvals'), el('ul', { id: 'decisions' }, ...(d.decisions || []).map((a) => el('li', {},
      when(a.atMs) + ' ' + a.tool + ' ' + a.decision + (a.by ? ' by ' + a.by.userName + ' (' + a.by.userId + ')' : ' (' + a.via + ')') + (a.always ? ', always' : '') + ': ' + a.args))),
    el('h2', {}, 'Tool calls'), toolCalls(d.toolCalls || []),
    el('h2', {}, 'Compactions'), timeline,
    el('h2', {}, 'Current summary'), el('pre', { id: 'summary' }, d.summary || '(none yet)'));
}
function toolCalls(calls) {
  if (calls.length === 0) return el('p', { id: 'tool-calls', class: 'muted' }, 'No tool calls in the recent turns.');
  return el('div', { class: 'scroll' }, el('table', { id: 'tool-calls' }, el('thead', {}, el('tr', {}, ...['turn', 'when', 'tool', 'arguments', 'result'].map((h) => el('th', {}, h)))),
    el('tbody', {}, ...calls.map((c, k) => el('tr', { 'data-turn': c.turn, 'data-tool': c.tool, class: k > 0 && calls[k - 1].turn === c.turn ? 'same-turn' : 'first-of-turn' },
      cell(k > 0 && calls[k - 1].turn === c.turn ? '' : c.turn, 1), cell(when(c.atMs)), cell(c.tool), el('td', { class: 'code' }, c.args),
      el('td', { class: 'code' + (c.result === null ? ' muted' : '') }, c.result === null ? '(no result yet)' : c.result))))));
}
async function refreshChannels() {
  const p = await getJson('api/channels', 'channels-panel');
  if (!p) return;
  $('channels-verdict').className = 'verdict-' + p.status;
  $('channels-verdict').textContent = (p.status === 'down' ? 'DOWN: ' : '') + p.detail + (p.fix ? ' — fix: ' + p.fix : '');
  $('channels-body').replaceChildren(...p.rows.map((r) => el('tr', { 'data-channel': r.channel },
    cell(r.gateway), cell(r.channel), el('td', { class: 'state-' + r.state }, r.state),
    cell(r.sinceMs ? when(r.sinceMs) : ''), cell(r.reason || ''))));
}
async function refreshStatus() {
  const r = await getJson('api/status', 'status-panel');
  if (!r) return;
  state.hygieneAt = r.sessions ? r.sessions.hygieneAt : null;
  $('status-verdict').className = r.ok ? 'verdict-ok' : 'verdict-down';
  $('status-verdict').textContent = r.ok ? 'Everything is up.' : 'DOWN: ' + r.checks.filter((c) => c.status === 'down').map((c) => c.name).join(', ');
  $('status-body').replaceChildren(...r.checks.map((c) => el('tr', { class: 'check-' + c.status, 'data-check': c.name },
    cell(c.status === 'down' ? 'DOWN' : c.status), cell(c.name), el('td', {}, c.detail, c.fix && c.status !== 'ok' ? el('div', { class: 'fix' }, 'fix: ' + c.fix) : ''))));
  const held = (p) => (r.deadWorkerTurns || []).find((d) => d.worker === p.id);
  $('processes-body').replaceChildren(...(r.processes || []).map((p) => el('tr', { 'data-role': p.role, class: p.alive ? 'alive' : 'dead' },
    cell(p.role), cell(p.host + ' pid ' + p.pid), cell(p.alive ? 'alive' : 'dead' + (held(p) ? ': ' + held(p).turns + (held(p).turns === 1 ? ' turn' : ' turns') + ' being recovered' : '')),
    cell(when(p.beatAt)), cell('v' + p.version))));
  const deadTurns = (r.deadWorkerTurns || []).flatMap((d) => d.sessions.map((session) => ({ session, worker: (r.processes || []).find((p) => p.id === d.worker) })));
  $('dead-turns').hidden = deadTurns.length === 0;
  $('dead-turns-body').replaceChildren(...deadTurns.map((t) => el('tr', { class: 'dead', 'data-session': t.session },
    cell(t.session), cell(t.worker ? t.worker.host + ' pid ' + t.worker.pid : '?'), cell('its worker died: a live worker is recovering the turn'))));
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
  try { await Promise.all([refreshStatus(), refreshChannels()]); await refreshList(); await refreshDetail(); $('status').textContent = 'updated ' + new Date().toLocaleTimeString(); }
  catch (err) { showError(err); }
}
$('sort').addEventListener('change', (e) => { state.sort = e.target.value; tick(); });
$('overview-link').href = 'overview' + location.search;
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
<span id="status" class="muted"></span><nav><a id="overview-link" href="overview">Usage overview</a><a href="admin/queues">queues</a></nav></header>
<main><section id="status-panel" hidden><h2>Status</h2><p id="status-verdict"></p><div class="scroll"><table id="status-checks"><tbody id="status-body"></tbody></table></div>
<h2>Gateways and workers</h2><div class="scroll"><table id="processes"><thead><tr><th>role</th><th>process</th><th>state</th><th>last beat (UTC)</th><th>version</th></tr></thead>
<tbody id="processes-body"></tbody></table></div>
<div id="dead-turns" hidden><h2>Turns of dead workers</h2><div class="scroll"><table><thead><tr><th>session</th><th>worker</th><th>state</th></tr></thead>
<tbody id="dead-turns-body"></tbody></table></div></div></section>
<section id="channels-panel" hidden><h2>Channels</h2><p id="channels-verdict"></p><div class="scroll"><table id="channels"><thead><tr>
<th>gateway</th><th>channel</th><th>state</th><th>since (UTC)</th><th>reason</th></tr></thead><tbody id="channels-body"></tbody></table></div></section>
<section><h2>Sessions</h2><div class="scroll"><table id="sessions"><thead><tr><th>session</th><th class="wide">channel</th><th class="num wide">messages</th>
<th class="num" title="the next request (system prompt, tools and messages) as a share of the usable window: the context window less the tokens reserved for the answer">context fill (of usable window)</th><th class="num wide">window</th><th class="num wide">tokens in</th><th class="num wide">tokens out</th><th class="num wide">cost</th>
<th class="num wide">compactions</th><th class="wide">last activity (UTC)</th></tr></thead><tbody id="sessions-body"></tbody></table></div></section>
<section id="detail"><p class="muted">Select a session to see its context fill, compactions and usage.</p></section></main>
<script>${SCRIPT.replace('__POLL_MS__', String(pollMs)).replace('__CHART__', () => CHART_SCRIPT)}</script></body></html>`;
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
