import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createMonitorApp,
  createPrometheusMetrics,
  MemorySessionView,
  type MonitorDeps,
  type MonitorOptions,
  type SessionDetail,
  type SessionPage,
} from '../../src/monitor/index.js';
import { seededSessions } from '../helpers/monitor-seed.js';
import { parseExposition } from '../helpers/prometheus.js';

const TOKEN = 'monitor-token-0123456789';
const servers: ServerType[] = [];

async function start(deps: MonitorDeps, options: MonitorOptions = {}, hostname = '127.0.0.1'): Promise<string> {
  const app = createMonitorApp(deps, { host: hostname, ...options });
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname }, () => resolve(s));
  });
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function scrape(base: string, headers: Record<string, string> = {}): Promise<Map<string, number>> {
  const res = await fetch(`${base}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

afterAll(async () => {
  await Promise.all(servers.map((s) => {
    const closed = new Promise((resolve) => s.close(resolve));
    (s as Server).closeAllConnections();
    return closed;
  }));
});

describe('monitor app', () => {
  let base: string;
  const reader = new MemorySessionView(seededSessions());
  const metrics = createPrometheusMetrics();
  let redisUp = true;

  beforeAll(async () => {
    base = await start({
      sessions: reader,
      metrics,
      checks: { redis: async () => { if (!redisUp) throw new Error('connect ECONNREFUSED 127.0.0.1:1'); }, queues: async () => true },
      queueDepth: async () => [{ queue: 'turns', state: 'waiting', count: 7 }, { queue: 'turns', state: 'active', count: 2 }],
    });
  });

  it('answers /healthz while the process is up', async () => {
    const res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'ok' });
  });

  it('answers /readyz 200 when every check passes and 503 naming the failed one', async () => {
    const ok = await fetch(`${base}/readyz`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ status: 'ready', checks: { redis: 'ok', queues: 'ok' } });
    redisUp = false;
    const down = await fetch(`${base}/readyz`);
    redisUp = true;
    expect(down.status).toBe(503);
    expect(await down.json()).toEqual({ status: 'not ready', checks: { redis: 'connect ECONNREFUSED 127.0.0.1:1', queues: 'ok' } });
  });

  it('exposes parseable metrics that change when the counters are incremented', async () => {
    const before = await scrape(base);
    expect(before.get('chatgate_queue_jobs{queue="turns",state="waiting"}')).toBe(7);
    expect(before.has('process_cpu_user_seconds_total')).toBe(true);
    expect(before.has('nodejs_heap_size_used_bytes')).toBe(true);

    metrics.record({ type: 'model_call', channel: 'telegram', outcome: 'ok', promptTokens: 1200, completionTokens: 80, cachedTokens: 1024, costUsd: 0.0012 });
    metrics.record({ type: 'model_call', channel: 'telegram', outcome: 'transient' });
    metrics.record({ type: 'compaction', layer: 'in-loop', outcome: 'compacted', tokensBefore: 66_000, tokensAfter: 19_800 });
    metrics.record({ type: 'hygiene_fired', channel: 'web' });
    metrics.record({ type: 'turn', channel: 'telegram', outcome: 'ok', durationMs: 1700 });
    metrics.record({ type: 'delivery_failure', channel: 'discord', reason: 'rate_limited' });
    metrics.record({ type: 'budget_event', kind: 'near', channel: 'telegram', model: 'gpt-4o-mini' });
    metrics.record({ type: 'budget_event', kind: 'exhausted', channel: 'telegram', model: 'gpt-4o-mini' });

    const after = await scrape(base);
    expect(after.get('chatgate_tokens_total{kind="prompt",channel="telegram"}')).toBe(1200);
    expect(after.get('chatgate_tokens_total{kind="completion",channel="telegram"}')).toBe(80);
    expect(after.get('chatgate_tokens_total{kind="cached",channel="telegram"}')).toBe(1024);
    expect(after.get('chatgate_model_calls_total{channel="telegram",outcome="ok"}')).toBe(1);
    expect(after.get('chatgate_model_calls_total{channel="telegram",outcome="transient"}')).toBe(1);
    expect(after.get('chatgate_cost_usd_total{channel="telegram"}')).toBeCloseTo(0.0012);
    expect(after.get('chatgate_delivery_failures_total{channel="discord",reason="rate_limited"}')).toBe(1);
    expect(after.get('chatgate_compactions_total{layer="in-loop",outcome="compacted"}')).toBe(1);
    expect(after.get('chatgate_compaction_tokens_removed_total{layer="in-loop"}')).toBe(46_200);
    expect(after.get('chatgate_hygiene_firings_total{channel="web"}')).toBe(1);
    expect(after.get('chatgate_turn_duration_seconds_count{channel="telegram",outcome="ok"}')).toBe(1);
    expect(after.get('chatgate_turn_duration_seconds_bucket{le="2",channel="telegram",outcome="ok"}')).toBe(1);
    expect(after.get('chatgate_budget_near_limit_total{channel="telegram",model="gpt-4o-mini"}')).toBe(1);
    expect(after.get('chatgate_budget_exhausted_total{channel="telegram",model="gpt-4o-mini"}')).toBe(1);
    for (const key of after.keys()) expect(key).not.toMatch(/session|user=|subject/i);
  });

  it('lists the seeded sessions sorted by last activity, by fill, and paged', async () => {
    const byActivity = (await (await fetch(`${base}/api/sessions`)).json()) as SessionPage;
    expect(byActivity.total).toBe(3);
    expect(byActivity.items.map((s) => s.id)).toEqual(['discord:2002', 'telegram:1001', 'web:abc']);
    const byFill = (await (await fetch(`${base}/api/sessions?sort=fill`)).json()) as SessionPage;
    expect(byFill.items.map((s) => s.id)).toEqual(['web:abc', 'telegram:1001', 'discord:2002']);
    const page = (await (await fetch(`${base}/api/sessions?sort=fill&order=asc&offset=1&limit=1`)).json()) as SessionPage;
    expect(page).toMatchObject({ total: 3, offset: 1, limit: 1 });
    expect(page.items.map((s) => s.id)).toEqual(['telegram:1001']);
    const web = (await (await fetch(`${base}/api/sessions?channel=web`)).json()) as SessionPage;
    expect(web.items.map((s) => s.id)).toEqual(['web:abc']);
    expect((await fetch(`${base}/api/sessions?sort=cost`)).status).toBe(400);
  });

  it('returns the seeded figures of one session', async () => {
    const res = await fetch(`${base}/api/sessions/${encodeURIComponent('telegram:1001')}`);
    expect(res.status).toBe(200);
    const detail = (await res.json()) as SessionDetail;
    expect(detail.session).toMatchObject({ id: 'telegram:1001', channel: 'telegram', messages: 120, contextTokens: 22_740, costUsd: 0.4567, compactions: 2 });
    expect(detail.ledger).toMatchObject({ cachedTokens: 1_024, calls: 60, compactions: 2, lastPromptTokens: 22_740 });
    expect(detail.compactions.map((c) => [c.turn, c.layer, c.outcome, c.tokensBefore, c.tokensAfter])).toEqual([
      [16, 'in-loop', 'compacted', 66_000, 19_800],
      [30, 'in-loop', 'compacted', 75_800, 22_740],
    ]);
    expect(detail.fillHistory).toHaveLength(30);
    expect(detail.pinnedFacts).toEqual(['ORD-48213-XK', '#4471']);
    expect(detail.notes[0]).toMatchObject({ key: 'name' });
    expect(detail.summary).toContain('ORD-48213-XK');
    expect((await fetch(`${base}/api/sessions/telegram:404`)).status).toBe(404);
  });

  it('serves the dashboard page on loopback without a token', async () => {
    const res = await fetch(`${base}/dashboard`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(await res.text()).toContain('id="sessions-body"');
  });
});

describe('monitor auth', () => {
  const reader = new MemorySessionView(seededSessions());

  it('bound off loopback, refuses every monitor route without the bearer token but keeps health open', async () => {
    const base = await start({ sessions: reader }, { monitorToken: TOKEN }, '0.0.0.0');
    for (const path of ['/metrics', '/api/sessions', '/api/sessions/web:abc', '/dashboard']) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect((await fetch(`${base}${path}`, { headers: { Authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
    }
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it('bound off loopback, accepts the bearer token, and ?token= logs a browser in with a cookie', async () => {
    const base = await start({ sessions: reader }, { monitorToken: TOKEN }, '0.0.0.0');
    const auth = { Authorization: `Bearer ${TOKEN}` };
    expect((await fetch(`${base}/api/sessions`, { headers: auth })).status).toBe(200);
    expect((await scrape(base, auth)).size).toBeGreaterThan(0);
    const login = await fetch(`${base}/dashboard?token=${TOKEN}`, { redirect: 'manual' });
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/dashboard');
    const cookie = login.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^cg_monitor=.+HttpOnly/);
    expect((await fetch(`${base}/dashboard`, { headers: { cookie: cookie.split(';')[0] } })).status).toBe(200);
    expect((await fetch(`${base}/api/sessions`, { headers: { cookie: cookie.split(';')[0] } })).status).toBe(200);
  });

  it('guards only its own routes, so a web chat mounted on the same app keeps its own rules', async () => {
    const app = createMonitorApp({ sessions: reader }, { host: '0.0.0.0', monitorToken: TOKEN });
    app.get('/api/chat/ping', (c) => c.text('pong'));
    expect((await app.request('/api/chat/ping')).status).toBe(200);
    expect((await app.request('/api/sessions')).status).toBe(401);
    expect((await app.request('/api/sessions/web:abc')).status).toBe(401);
  });

  it('`/` leads to the dashboard (keeping ?token= for the log-in) when no web chat answers it first', async () => {
    const base = await start({ sessions: reader }, { monitorToken: TOKEN }, '0.0.0.0');
    const root = await fetch(`${base}/?token=${TOKEN}`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe(`/dashboard?token=${TOKEN}`);
    expect((await fetch(`${base}/`, { redirect: 'manual', headers: { Authorization: `Bearer ${TOKEN}` } })).headers.get('location')).toBe('/dashboard');
    // A web chat mounted before the monitor keeps `/` for itself.
    const app = new Hono();
    app.get('/', (c) => c.redirect('/chat', 302));
    app.route('/', createMonitorApp({ sessions: reader }, { host: '127.0.0.1' }));
    expect((await app.request('/')).headers.get('location')).toBe('/chat');
  });

  it('bound off loopback without a configured token, refuses everything (fail closed)', async () => {
    const base = await start({ sessions: reader }, {}, '0.0.0.0');
    expect((await fetch(`${base}/api/sessions`)).status).toBe(401);
    expect((await fetch(`${base}/api/sessions`, { headers: { Authorization: 'Bearer anything-at-all-123' } })).status).toBe(401);
  });
});
