/**
 * The dashboard's fill chart, as browser JS inlined into the page (it uses the page's `el`,
 * `pct` and `int` helpers). One point per model call (the request size the provider billed), the
 * next request as an open point, compactions between calls at the size of the request after
 * them, no-ops as small open rings, resets as dashed verticals; both trigger lines on the same
 * scale as the fill (shares of the usable window). The SVG scales to its container's width.
 */
export const CHART_SCRIPT = `
function chart(d) {
  const W = 640, H = 240, L = 40, R = 10, T = 12, B = 26;
  const pts = d.fillHistory, usable = d.context.usableWindow || 1;
  const calls = Math.max(1, ...pts.map((p) => p.call)) + 1;
  const top = Math.max(1, ...pts.map((p) => p.fill), d.context.fill);
  const x = (c) => L + ((c - 1) / Math.max(1, calls - 1)) * (W - L - R);
  const y = (f) => T + (1 - Math.min(top, Math.max(0, f)) / top) * (H - T - B);
  const svg = el('svg', { svg: 1, id: 'fill-chart', viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'xMidYMid meet', role: 'img', 'aria-label': 'context fill per model call' });
  for (const f of [0, 0.25, 0.5, 0.75, 1]) {
    svg.append(el('line', { svg: 1, class: 'grid-line', x1: L, x2: W - R, y1: y(f), y2: y(f) }));
    svg.append(el('text', { svg: 1, x: 4, y: y(f) + 4 }, Math.round(f * 100) + '%'));
  }
  for (const [name, f] of [['compress', d.context.compressAt], ['hygiene', d.context.hygieneAt]]) {
    svg.append(el('line', { svg: 1, class: 'threshold threshold-' + name, x1: L, x2: W - R, y1: y(f), y2: y(f), 'stroke-dasharray': '6 4' }));
    svg.append(el('text', { svg: 1, class: 'threshold-label', x: W - R - 4, y: y(f) - 4, 'text-anchor': 'end' }, name + ' ' + Math.round(f * 1000) / 10 + '%'));
  }
  for (const r of d.resets) {
    const g = el('g', { svg: 1, class: 'reset-marker' });
    g.append(el('line', { svg: 1, x1: x(r.call + 0.5), x2: x(r.call + 0.5), y1: y(top), y2: y(0), 'stroke-dasharray': '2 3' }));
    g.append(el('title', { svg: 1 }, 'reset: ' + r.removedMessages + (r.removedMessages === 1 ? ' message' : ' messages') + ' left the context (turn ' + r.turn + ')'));
    svg.append(g);
  }
  if (pts.length > 0) {
    svg.append(el('polyline', { svg: 1, class: 'fill-line', points: pts.map((p) => x(p.call).toFixed(1) + ',' + y(p.fill).toFixed(1)).join(' '), fill: 'none', 'stroke-width': 2 }));
  }
  const last = pts[pts.length - 1];
  const next = el('circle', { svg: 1, class: 'next-point', cx: x(calls), cy: y(d.context.fill), r: 4, 'stroke-width': 2 });
  next.append(el('title', { svg: 1 }, 'next request: ' + int(d.context.tokens) + ' tokens (' + pct(d.context.fill) + ')'));
  if (last) svg.append(el('line', { svg: 1, class: 'next-line', x1: x(last.call), y1: y(last.fill), x2: x(calls), y2: y(d.context.fill), 'stroke-dasharray': '3 3' }));
  svg.append(next);
  for (const c of d.compactions) {
    const done = ['compacted', 'pruned', 'fallback'].includes(c.outcome);
    const g = el('g', { svg: 1, class: done ? 'compaction-marker' : 'compaction-noop', 'data-layer': c.layer, 'data-outcome': c.outcome });
    g.append(el('circle', { svg: 1, cx: x(c.call + 0.5), cy: y(c.requestTokensAfter / usable), r: done ? 5 : 3 }));
    g.append(el('title', { svg: 1 }, c.layer + ' ' + c.outcome + ': request ' + int(c.requestTokensBefore) + ' → ' + int(c.requestTokensAfter) + ' tokens (turn ' + c.turn + ')'));
    svg.append(g);
  }
  svg.append(el('text', { svg: 1, x: L, y: H - 8 }, 'call 1'));
  svg.append(el('text', { svg: 1, x: W - R, y: H - 8, 'text-anchor': 'end' }, 'next'));
  return svg;
}
function legend() {
  const item = (cls, label) => el('span', { class: 'legend-item' }, el('i', { class: 'key ' + cls }), label);
  return el('div', { id: 'chart-legend', class: 'legend' }, item('k-fill', 'request per model call'), item('k-next', 'next request'),
    item('k-compaction', 'compaction (size after)'), item('k-noop', 'no-op'), item('k-reset', 'reset'),
    item('k-compress', 'compress line'), item('k-hygiene', 'hygiene line'));
}
`;
