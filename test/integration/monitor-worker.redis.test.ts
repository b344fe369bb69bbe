/**
 * The worker-only process's HTTP server: `/healthz`, `/readyz` and `/metrics` with the monitor's
 * access rules, and `chatgate worker` (runRoles with the worker role alone) serving the metrics
 * its turns record.
 */
import { createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { runRoles } from '../../src/cli/run.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { createPrometheusMetrics, createWorkerMonitorApp, serveHttp } from '../../src/monitor/index.js';
import { createTurnProducer } from '../../src/queue/producer.js';
import { collectOutbound, createTestRedis } from '../helpers/redis.js';
import { parseExposition } from '../helpers/prometheus.js';

const TOKEN = 'worker-token-0123456789';

const get = (app: ReturnType<typeof createWorkerMonitorApp>, path: string, headers: Record<string, string> = {}) =>
  Promise.resolve(app.request(`http://127.0.0.1:8787${path}`, { headers: { host: '127.0.0.1:8787', ...headers } }));

describe('createWorkerMonitorApp', () => {
  it('serves /healthz and /readyz open, and /metrics from the metrics it is given', async () => {
    let redisUp = true;
    const metricsPort = createPrometheusMetrics({ build: { version: '9.9.9' } });
    const app = createWorkerMonitorApp({ metrics: metricsPort, checks: { redis: async () => redisUp } }, { host: '127.0.0.1' });
    expect(await (await get(app, '/healthz')).json()).toMatchObject({ status: 'ok' });
    expect((await get(app, '/readyz')).status).toBe(200);
    redisUp = false;
    expect(await (await get(app, '/readyz')).json()).toEqual({ status: 'not ready', checks: { redis: 'failed' } });
    const metrics = await get(app, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toBe(metricsPort.registry.contentType);
    const text = await metrics.text();
    expect(parseExposition(text).has('process_cpu_user_seconds_total')).toBe(true);
    expect(parseExposition(text).get(`chatgate_build_info{version="9.9.9",node_version="${process.version}"}`)).toBe(1);
    for (const name of ['chatgate_model_calls_total', 'chatgate_tokens_total', 'chatgate_turn_duration_seconds', 'chatgate_compactions_total']) {
      expect(text).toContain(`# HELP ${name} `);
    }
  });

  it('bound off loopback, requires the token for /metrics but not for the probes', async () => {
    for (const monitorToken of [TOKEN, undefined]) {
      const app = createWorkerMonitorApp({}, { host: '0.0.0.0', monitorToken });
      expect((await get(app, '/metrics')).status).toBe(401);
      expect((await get(app, '/healthz')).status).toBe(200);
      expect((await get(app, '/readyz')).status).toBe(200);
    }
    const app = createWorkerMonitorApp({}, { host: '0.0.0.0', monitorToken: TOKEN });
    expect((await get(app, '/metrics', { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
  });

  it('open on loopback, answers /metrics only under loopback Host names', async () => {
    const app = createWorkerMonitorApp({}, { host: '127.0.0.1' });
    expect((await get(app, '/metrics', { host: 'rebound.example:8787' })).status).toBe(403);
    expect((await get(app, '/metrics', { host: 'localhost:8787' })).status).toBe(200);
  });

  it('serveHttp reports a taken port with its code', async () => {
    const blocker = await listenOnFreePort();
    const port = (blocker.address() as { port: number }).port;
    await expect(serveHttp(createWorkerMonitorApp(), '127.0.0.1', port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    blocker.close();
  });
});

describe('chatgate worker (worker role alone)', () => {
  const t = createTestRedis();
  const env = {
    REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix,
    CHATGATE_WORKER_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'silent',
  };
  afterAll(() => t.cleanup());

  it('serves /healthz and /metrics on CHATGATE_HTTP_HOST:CHATGATE_WORKER_HTTP_PORT, printed at start, with the figures of its turns', async () => {
    const out: string[] = [];
    const err: string[] = [];
    let printed: (url: string) => void = () => undefined;
    const metricsUrl = new Promise<string>((resolve) => (printed = resolve));
    let stop: (signal: string) => void = () => undefined;
    const stopped = new Promise<string>((resolve) => (stop = resolve));
    // The ready banner is on stderr (stdout holds only log lines).
    const io = {
      env,
      out: (text: string) => out.push(text),
      err: (text: string) => {
        err.push(text);
        const url = text.match(/^Metrics:\s+(\S+)$/)?.[1];
        if (url) printed(url);
      },
    };
    const exit = runRoles(io, { gateway: false, worker: true }, { demo: true, concurrency: 1 }, () => stopped);
    const url = await metricsUrl;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(err).toContain(`Health:    ${url.replace(/\/metrics$/, '/healthz')}`);
    expect((await fetch(url.replace(/\/metrics$/, '/healthz'))).status).toBe(200);
    expect(await (await fetch(url.replace(/\/metrics$/, '/readyz'))).json()).toMatchObject({ status: 'ready', checks: { redis: 'ok' } });

    const calls = (samples: Map<string, number>) => samples.get('chatgate_model_calls_total{channel="web",outcome="ok"}') ?? 0;
    const before = parseExposition(await (await fetch(url)).text());
    const outbound = await collectOutbound(t);
    const producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix });
    await producer.submitInbound(message('hello worker'));
    await outbound.waitFor((replies) => replies.length > 0);
    const after = parseExposition(await (await fetch(url)).text());
    expect(calls(after)).toBeGreaterThan(calls(before));
    expect(after.get('chatgate_turn_duration_seconds_count{channel="web",outcome="ok"}') ?? 0)
      .toBeGreaterThan(before.get('chatgate_turn_duration_seconds_count{channel="web",outcome="ok"}') ?? 0);
    await producer.close();
    await outbound.close();

    stop('SIGTERM');
    expect(await exit).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
  });

  it('warns and keeps working when the port is taken (another worker on this machine)', async () => {
    const blocker = await listenOnFreePort();
    const port = (blocker.address() as { port: number }).port;
    const err: string[] = [];
    const out: string[] = [];
    let ready: () => void = () => undefined;
    const running = new Promise<void>((resolve) => (ready = resolve));
    const io = { env: { ...env, CHATGATE_WORKER_HTTP_PORT: String(port) }, out: (text: string) => out.push(text), err: (text: string) => { err.push(text); if (text.startsWith('Press Ctrl+C')) ready(); } };
    let stop: (signal: string) => void = () => undefined;
    const exit = runRoles(io, { gateway: false, worker: true }, { demo: true, concurrency: 1 }, () => new Promise((resolve) => (stop = resolve)));
    await running;
    expect(err.join('\n')).toContain(`worker metrics not served: 127.0.0.1:${port} is in use (give each worker its own CHATGATE_WORKER_HTTP_PORT`);
    expect(err.some((line) => line.startsWith('Metrics:'))).toBe(false);
    stop('SIGTERM');
    expect(await exit).toBe(0);
    blocker.close();
  });
});

function message(text: string): InboundMessage {
  return { id: `web:worker-http:${Date.now()}`, channel: 'web', chatId: 'worker-http', userId: 'u1', userName: 'Ann', text, attachments: [], chatType: 'private', receivedAt: Date.now() };
}

function listenOnFreePort(): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}
