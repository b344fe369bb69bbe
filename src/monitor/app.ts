import type { Queue } from 'bullmq';
import { Hono } from 'hono';
import { z } from 'zod';
import { createOutageLog, createSilentLogger, type Logger } from '../log.js';
import { createAccessGuard } from './auth.js';
import { createQueuesBoard, QUEUES_BASE_PATH, readQueueDepths } from './bull-board.js';
import { renderDashboardPage } from './dashboard-page.js';
import { monitorPageHeaders } from './page-csp.js';
import { addMetricsRoute, addProbeRoutes, type ReadinessCheck } from './health.js';
import { createPrometheusMetrics, type ExposedMetrics, type QueueDepthSource } from './metrics.js';
import { addUsageRoutes, USAGE_PATHS, type UsageMonitorDeps } from './usage-routes.js';
import { CHANNEL_NAMES } from '../core/inbound.js';
import type { SessionView } from '../core/session-view.js';
import { stripUndefined } from '../core/option-checks.js';

export type { ReadinessCheck } from './health.js';

/** The dashboard's channels panel (`GET /api/channels`): the verdict `chatgate status` prints and each gateway's channels. */
export interface ChannelsPanel {
  status: 'ok' | 'down' | 'skip';
  detail: string;
  fix?: string;
  rows: Array<{ gateway: string; channel: string; state: string; reason?: string; sinceMs?: number }>;
}

/**
 * The status panel (`GET /api/status`): the report `chatgate status` prints, from the same builder
 * (the composition root wires it). The monitor reads only these fields.
 */
export interface StatusPanel {
  ok: boolean;
  checks: Array<{ name: string; status: 'ok' | 'warn' | 'down' | 'skip'; detail: string; fix?: string }>;
  /** Gateways and workers heard of, alive and dead. */
  processes?: Array<{ role: string; id: string; host: string; pid: number; alive: boolean; beatAt: number; startedAt: number; version: string }>;
  /** Turns still recorded as running on a dead worker (a live one is recovering them), by worker id. */
  deadWorkerTurns?: Array<{ worker: string; turns: number; sessions: string[] }>;
  /** The hygiene line, a share of the usable window: the dashboard marks the sessions at or over it. */
  sessions?: { hygieneAt: number };
}

/** How long one status report serves the dashboards polling it, ms (building it scans sessions and queues). */
const STATUS_REUSE_MS = 5_000;

/** What the monitor reads from. */
export interface MonitorDeps {
  /** Sessions for `/api/sessions` and the dashboard. */
  sessions: SessionView;
  /** Readiness checks by name (e.g. `redis`, `queues`), run by `/readyz`. Default none. */
  checks?: Record<string, ReadinessCheck>;
  /** Fields `/readyz` adds beside its checks (the gateway: which leased channels it runs). Default none. */
  readyDetails?: () => Record<string, unknown>;
  /** The channels panel of `/api/channels` and the dashboard (the gateway: from the heartbeats). Default none (404, no panel). */
  channels?: () => Promise<ChannelsPanel>;
  /** The status panel of `/api/status` and the dashboard's first screen. Default none (404, no panel). */
  status?: () => Promise<StatusPanel>;
  /** BullMQ queues shown by bull-board at `/admin/queues` and counted by `chatgate_queue_jobs`. */
  queues?: readonly Queue[];
  /** Where `chatgate_queue_jobs` reads its figures. Default: job counts of `queues`. */
  queueDepth?: QueueDepthSource;
  /** Usage over time for `/api/usage` and the overview page (`/`, then). Default none (no routes). */
  usage?: UsageMonitorDeps;
  /** What `/metrics` exposes (the process's Prometheus metrics). Default: a fresh registry of its own. */
  metrics?: ExposedMetrics;
  logger?: Logger;
}

/** Options of {@link createMonitorApp}. */
export interface MonitorOptions {
  /** Address the HTTP server binds to; off loopback the token is required. Default `127.0.0.1`. */
  host?: string;
  /** `CHATGATE_MONITOR_TOKEN`: bearer token of every route but `/healthz` and `/readyz`. */
  monitorToken?: string;
  /** Dashboard refresh interval, ms. Default 3000. */
  dashboardPollMs?: number;
  /** Time one readiness check may take, ms. Default 2000. */
  checkTimeoutMs?: number;
}

/** Resolved {@link MonitorOptions}. */
export type ResolvedMonitorOptions = Required<Omit<MonitorOptions, 'monitorToken'>> & Pick<MonitorOptions, 'monitorToken'>;

const DEFAULTS: ResolvedMonitorOptions = { host: '127.0.0.1', dashboardPollMs: 3000, checkTimeoutMs: 2000 };

const LIST_QUERY = z.object({
  sort: z.enum(['lastActivity', 'fill']).optional(),
  order: z.enum(['asc', 'desc']).optional(),
  offset: z.coerce.number().int().min(0).optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  channel: z.enum(CHANNEL_NAMES).optional(),
});

/**
 * The monitor as a hono app: `/healthz`, `/readyz` (open), and behind {@link createAccessGuard}
 * `/metrics`, `/api/channels`, `/api/sessions`, `/api/sessions/:id`, `/dashboard` and bull-board at `/admin/queues`
 * (the token when one is set or when bound off loopback; otherwise loopback Host names only).
 * Mount the web chat on the same app (or route this one into it). Sets the queue-depth source of `deps.metrics`.
 */
export function createMonitorApp(deps: MonitorDeps, options: MonitorOptions = {}): Hono {
  const resolved: ResolvedMonitorOptions = { ...DEFAULTS, ...stripUndefined(options) };
  const log = (deps.logger ?? createSilentLogger()).child({ component: 'monitor' });
  const metrics = deps.metrics ?? createPrometheusMetrics();
  const queues = deps.queues ?? [];
  metrics.setQueueDepthSource(deps.queueDepth ?? (queues.length > 0 ? () => readQueueDepths(queues) : undefined));

  const app = new Hono();
  const outage = createOutageLog(log); // a dashboard polls on through a Redis outage
  app.onError((err, c) => {
    outage.error({ err, path: c.req.path }, 'monitor request failed');
    return c.json({ error: 'internal error' }, 500);
  });
  addProbeRoutes(app, deps.checks ?? {}, resolved.checkTimeoutMs, deps.readyDetails);

  const auth = createAccessGuard({ host: resolved.host, monitorToken: resolved.monitorToken });
  // Only the monitor's own paths: the web chat may be mounted on the same app with its own rules.
  for (const path of ['/metrics', '/api/channels', '/api/status', '/api/sessions', '/api/sessions/*', '/dashboard', ...USAGE_PATHS, QUEUES_BASE_PATH, `${QUEUES_BASE_PATH}/*`]) app.use(path, auth);

  addMetricsRoute(app, metrics.registry);
  app.get('/api/sessions', async (c) => {
    const query = LIST_QUERY.safeParse(c.req.query());
    if (!query.success) return c.json({ error: 'bad query', issues: query.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) }, 400);
    return c.json(await deps.sessions.listSessions(query.data));
  });
  app.get('/api/channels', async (c) => (deps.channels ? c.json(await deps.channels()) : c.json({ error: 'no channels here' }, 404)));
  const status = deps.status ? reuseFor(deps.status, STATUS_REUSE_MS) : undefined;
  app.get('/api/status', async (c) => (status ? c.json(await status()) : c.json({ error: 'no status here' }, 404)));
  app.get('/api/sessions/:id', async (c) => {
    const detail = await deps.sessions.getSession(c.req.param('id'));
    return detail ? c.json(detail) : c.json({ error: 'no such session' }, 404);
  });
  const dashboard = renderDashboardPage({ pollMs: resolved.dashboardPollMs });
  const dashboardHeaders = monitorPageHeaders(dashboard);
  app.get('/dashboard', (c) => c.html(dashboard, 200, dashboardHeaders));
  if (deps.usage) addUsageRoutes(app, deps.usage);
  if (queues.length > 0) app.route(QUEUES_BASE_PATH, createQueuesBoard(queues, QUEUES_BASE_PATH));
  // `/` leads somewhere: the web chat answers it first where it is mounted; otherwise (a gateway
  // off loopback with bot channels only) the dashboard, keeping `?token=` for its log-in.
  app.get('/', (c) => c.redirect(`/${deps.usage ? 'overview' : 'dashboard'}${new URL(c.req.url).search}`, 302));
  return app;
}


/** `read`, with one result served to every caller for `reuseMs` (and one read in flight at a time). */
function reuseFor<T>(read: () => Promise<T>, reuseMs: number): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    if (!last || Date.now() - last.at > reuseMs) {
      const value = read();
      last = { at: Date.now(), value };
      value.catch(() => { last = undefined; });
    }
    return last.value;
  };
}
