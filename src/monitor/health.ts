import type { Context, Hono } from 'hono';
import type { Registry } from 'prom-client';

/** A readiness check: resolves when the dependency is reachable; rejects (or resolves false) when not. */
export type ReadinessCheck = () => Promise<unknown>;

/**
 * Adds the open probes to `app`: `/healthz` (process up: `{ status: 'ok', uptimeS }`) and
 * `/readyz` (200 `ready` when every check passes within `checkTimeoutMs`, else 503 naming each failure;
 * the fields of `details()`, if given, beside the checks).
 */
export function addProbeRoutes(app: Hono, checks: Record<string, ReadinessCheck>, checkTimeoutMs: number, details?: () => Record<string, unknown>): void {
  app.get('/healthz', (c) => c.json({ status: 'ok', uptimeS: Math.round(process.uptime()) }));
  app.get('/readyz', (c) => readiness(c, checks, checkTimeoutMs, details));
}

/** Adds `GET /metrics`: the registry in the Prometheus text format. Guard it before calling. */
export function addMetricsRoute(app: Hono, registry: Registry): void {
  app.get('/metrics', async (c) => c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType }));
}

async function readiness(c: Context, checks: Record<string, ReadinessCheck>, timeoutMs: number, details?: () => Record<string, unknown>) {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => [name, await runCheck(check, timeoutMs)] as const),
  );
  const results = Object.fromEntries(entries);
  const ready = entries.every(([, result]) => result === 'ok');
  return c.json({ status: ready ? 'ready' : 'not ready', checks: results, ...details?.() }, ready ? 200 : 503);
}

async function runCheck(check: ReadinessCheck, timeoutMs: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`timed out after ${timeoutMs} ms`), timeoutMs);
  });
  const run = check().then(
    (result) => (result === false ? 'failed' : 'ok'),
    (err: unknown) => (err instanceof Error ? err.message : String(err)),
  );
  try {
    return await Promise.race([run, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
