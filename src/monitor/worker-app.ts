import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { createSilentLogger, type Logger } from '../log.js';
import { createAccessGuard } from './auth.js';
import { httpServerOptions, type HttpTimeouts } from './http-timeouts.js';
import { addMetricsRoute, addProbeRoutes, type ReadinessCheck } from './health.js';
import { createPrometheusMetrics, type ExposedMetrics } from './metrics.js';

/** What the worker's HTTP server reads from. */
export interface WorkerMonitorDeps {
  /** Readiness checks by name (e.g. `redis`), run by `/readyz`. Default none. */
  checks?: Record<string, ReadinessCheck>;
  /** What `/metrics` exposes: the metrics the worker records into. Default: a fresh registry of its own. */
  metrics?: ExposedMetrics;
  logger?: Logger;
}

/** Options of {@link createWorkerMonitorApp}. */
export interface WorkerMonitorOptions {
  /** Address the HTTP server binds to (`CHATGATE_HTTP_HOST`); off loopback the token is required. Default `127.0.0.1`. */
  host?: string;
  /** `CHATGATE_MONITOR_TOKEN`: bearer token of `/metrics` (same rules as the gateway's monitor). */
  monitorToken?: string;
  /** Time one readiness check may take, ms. Default 2000. */
  checkTimeoutMs?: number;
}

/** A listening HTTP server. */
export interface RunningHttpServer {
  /** Base URL, e.g. `http://127.0.0.1:8787` (the real port when 0 was asked for). */
  url: string;
  server: ServerType;
  /** Stops listening and drops open connections. */
  close(): Promise<void>;
}

/**
 * The HTTP app of a worker-only process (`chatgate worker`), which has no gateway server:
 * `/healthz` and `/readyz` (open) and `/metrics` (model calls, tokens, turn latency and in-loop
 * compactions recorded in this process) behind the monitor's {@link createAccessGuard}.
 */
export function createWorkerMonitorApp(deps: WorkerMonitorDeps = {}, options: WorkerMonitorOptions = {}): Hono {
  const log = (deps.logger ?? createSilentLogger()).child({ component: 'worker-monitor' });
  const app = new Hono();
  app.onError((err, c) => {
    log.error({ err, path: c.req.path }, 'worker monitor request failed');
    return c.json({ error: 'internal error' }, 500);
  });
  addProbeRoutes(app, deps.checks ?? {}, options.checkTimeoutMs ?? 2000);
  app.use('/metrics', createAccessGuard({ host: options.host ?? '127.0.0.1', monitorToken: options.monitorToken }));
  addMetricsRoute(app, (deps.metrics ?? createPrometheusMetrics()).registry);
  return app;
}

/**
 * Serves `app` on `host`:`port` (0: any free port), with `timeouts` (default `DEFAULT_HTTP_TIMEOUTS`).
 * @throws Error naming the address when it cannot listen (e.g. `EADDRINUSE`); its `code` is kept.
 */
export function serveHttp(app: Hono, host: string, port: number, timeouts?: HttpTimeouts): Promise<RunningHttpServer> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: host, port, serverOptions: httpServerOptions(timeouts) }, (info) => {
      server.off('error', onError);
      const shownHost = info.address.includes(':') ? `[${info.address}]` : info.address;
      resolve({ url: `http://${shownHost}:${info.port}`, server, close: () => closeServer(server) });
    });
    const onError = (err: NodeJS.ErrnoException): void => {
      reject(Object.assign(new Error(`the HTTP server could not listen on ${host}:${port} (${err.message})`), { code: err.code, cause: err }));
    };
    server.once('error', onError);
  });
}

function closeServer(server: ServerType): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    if ('closeAllConnections' in server) server.closeAllConnections();
  });
}
