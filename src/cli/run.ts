import { DEMO_MODEL, type Config } from '../config.js';
import type { GatewayHandle } from '../gateway/index.js';
import type { DemoModel } from '../llm/demo-model.js';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';
import type { RunningWorker } from '../../workers/main.js';
import { createPrometheusMetrics, type PrometheusMetrics } from '../monitor/metrics.js';
import { gatewayOptions, workerOptions } from './compose.js';
// What only one role or mode uses (the gateway and its channels, the worker and its tools, the demo
// model, the worker's HTTP server) loads where it starts: a process loads only what it runs.
import { CliExit, connectRedis, errorText, EXIT, loadCliConfig, packageVersion, progress, roleLogger, warnMisspeltOptions, type CliIo, type CliRedis } from './context.js';
import { isLlmUnconfigured, LLM_HELP, probeModels } from './llm-check.js';
import { createBudgetLedger } from '../budget/ledger.js';
import { hasBudgets } from '../core/budget.js';
import { countOf } from '../core/plural.js';
import type { UsageMonitorDeps } from '../monitor/usage-routes.js';
import { redactRedisUrl } from '../redis/client.js';
import { GatewayError } from '../errors.js';
import { createTokenCounter } from '../llm/encodings.js';

/** Which roles a process runs. */
export interface RunRoles {
  gateway: boolean;
  worker: boolean;
}

/** Flags of `start`, `gateway` and `worker`. */
export interface RunFlags {
  demo?: boolean;
  concurrency?: number;
}

/** How long the shutdown may take after the stop signal before the process exits anyway, ms. */
export const SHUTDOWN_BOUND_MS = 10_000;

/**
 * How long after the first stop signal a second one still counts as the same press, ms. One Ctrl+C
 * reaches chatgate twice under `npm start`: the terminal signals the whole process group and npm
 * forwards its own copy to its child.
 */
export const FORCE_STOP_AFTER_MS = 1_000;

/**
 * Resolves with the signal's name on the first SIGINT or SIGTERM. A signal within
 * {@link FORCE_STOP_AFTER_MS} of it is the same press (noted, ignored); a later one exits the
 * process at once (code 130); the embedded redis-server goes with it (src/redis/launcher.ts).
 */
export function waitForStopSignal(): Promise<string> {
  return new Promise((resolve) => {
    const onSignal = (signal: string) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      const firstAt = Date.now();
      const again = (second: string) => {
        if (Date.now() - firstAt < FORCE_STOP_AFTER_MS) return;
        process.stderr.write(`chatgate: ${second} again: exiting now\n`);
        process.exit(130);
      };
      process.on('SIGINT', again);
      process.on('SIGTERM', again);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

/**
 * `chatgate start|gateway|worker`: Redis, the LLM endpoint (or the demo model), then the roles;
 * runs until `stop` resolves (default SIGINT/SIGTERM), then closes everything it started.
 * @returns the exit code.
 */
export async function runRoles(io: CliIo, roles: RunRoles, flags: RunFlags, stop: () => Promise<string> = waitForStopSignal): Promise<number> {
  const stopping = stop();
  // Signals are honoured from the first moment: a start still waiting (on Redis, the model, a
  // channel) is abandoned and what it opened is closed.
  const abort = new AbortController();
  void stopping.then((signal) => abort.abort(signal));
  const load = (demo: boolean) => loadCliConfig(io, {
    // --demo means the demo model with its small window, whatever model the environment names.
    ...(demo ? { CHATGATE_DEMO: 'true', CHATGATE_MODEL: DEMO_MODEL, CHATGATE_SUMMARY_MODEL: '', CHATGATE_CONTEXT_WINDOW: '' } : {}),
    ...(flags.concurrency !== undefined ? { CHATGATE_WORKER_CONCURRENCY: String(flags.concurrency) } : {}),
  });
  warnMisspeltOptions(io);
  let config = load(flags.demo === true);
  if (roles.gateway && roles.worker && !config.demo && isLlmUnconfigured(config)) {
    // A bare `npm start` on a fresh machine: show a working bot at once rather than an error.
    io.err(NO_LLM_NOTICE);
    config = load(true);
  }
  const logger = roleLogger(config);
  const cleanups: Array<() => Promise<void>> = [];
  const code = await startAndRun({ io, roles, logger, cleanups, stopping, signal: abort.signal }, config);
  const finished = await runCleanups(io, cleanups);
  return finished ? code : EXIT.failure;
}

interface RunContext {
  io: CliIo;
  roles: RunRoles;
  logger: Logger;
  cleanups: Array<() => Promise<void>>;
  stopping: Promise<string>;
  /** Aborted by the stop signal. */
  signal: AbortSignal;
}

/** Redis, the model, the roles; then waits for the stop signal. @returns the exit code. */
async function startAndRun(ctx: RunContext, initial: Config): Promise<number> {
  const { io, roles, logger, cleanups, signal } = ctx;
  const untilStopped = <T>(step: Promise<T>): Promise<T> => raceAbort(step, signal);
  try {
    progress(io, 'looking for Redis…');
    const connecting = connectRedis(io, initial, logger);
    // A connection that arrives after the stop is closed too (and its redis-server stopped).
    void connecting.then((c) => { if (signal.aborted) void c.close(); }, () => undefined);
    const conn: CliRedis = await untilStopped(connecting);
    cleanups.push(() => conn.close());
    progress(io, `using Redis at ${redactRedisUrl(conn.resolved.url)} (${conn.resolved.source})`);
    const config = await untilStopped(prepareModel(io, initial, logger, cleanups));
    const handles = await untilStopped(startRoles(io, config, conn.redis, logger, roles, cleanups, signal));
    printReady(io, config, roles, handles);
    const signalName = await ctx.stopping;
    progress(io, `${signalName}: shutting down…${signalName === 'SIGINT' ? ' (Ctrl+C again, a second or more later, exits at once)' : ''}`);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CliExit) return err.exitCode;
    if (signal.aborted) {
      progress(io, `${String(signal.reason)} while starting: shutting down…`);
      return EXIT.failure;
    }
    io.err(`chatgate: ${startedWhat(roles)} failed to start: ${errorText(err)}`);
    // An explained failure (a port in use, a channel that cannot connect) needs no stack in the log.
    logger.error(err instanceof GatewayError ? { code: err.code, reason: err.message } : { err }, 'start failed');
    return EXIT.failure;
  }
}

/**
 * Runs the cleanups newest first, within {@link SHUTDOWN_BOUND_MS}; a shutdown that takes longer
 * is left behind (the process exits). @returns false when it was left behind.
 */
async function runCleanups(io: CliIo, cleanups: Array<() => Promise<void>>): Promise<boolean> {
  if (cleanups.length === 0) return true;
  const all = (async () => {
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch((err: unknown) => io.err(`chatgate: shutdown step failed: ${errorText(err)}`));
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<'late'>((resolve) => { timer = setTimeout(() => resolve('late'), SHUTDOWN_BOUND_MS); });
  const outcome = await Promise.race([all.then(() => 'done' as const), bound]);
  clearTimeout(timer);
  if (outcome === 'late') {
    io.err(`chatgate: the shutdown did not finish within ${SHUTDOWN_BOUND_MS / 1000} s; exiting anyway`);
    return false;
  }
  progress(io, 'stopped');
  return true;
}

/** `step`, or a rejection as soon as `signal` fires. */
function raceAbort<T>(step: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('stopped'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('stopped'));
    signal.addEventListener('abort', onAbort, { once: true });
    step.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Starts the demo model (demo mode) or checks that the endpoint answers. @returns the config to use. */
async function prepareModel(io: CliIo, config: Config, logger: Logger, cleanups: Array<() => Promise<void>>): Promise<Config> {
  if (config.demo) {
    const { startDemoModel } = await import('../llm/demo-model.js');
    const demo: DemoModel = await startDemoModel({ logger, model: config.llm.model, wordDelayMs: config.demoWordDelayMs });
    cleanups.push(() => demo.close());
    progress(io, `DEMO MODE: replies come from the built-in offline demo model at ${demo.baseUrl}, not from a real LLM`);
    // Demo tokens cost nothing, whatever model name the demo answers to.
    const pricing = { input: 0, output: 0, cachedInput: 0 };
    return { ...config, llm: { ...config.llm, baseUrl: demo.baseUrl, apiKey: config.llm.apiKey ?? 'demo', pricing } };
  }
  progress(io, `checking the LLM endpoint ${config.llm.baseUrl}…`);
  const probe = await probeModels(config.llm);
  if (!probe.ok) {
    io.err(`chatgate: cannot use the LLM endpoint: ${probe.detail}.`);
    io.err(LLM_HELP);
    throw new CliExit(EXIT.failure);
  }
  if (probe.models && probe.models.length > 0 && !probe.models.includes(config.llm.model)) {
    progress(io, `warning: ${config.llm.baseUrl} does not list model ${config.llm.model} (run \`chatgate doctor\` to check it answers)`);
  }
  return config;
}

/** What {@link startRoles} started that {@link printReady} shows. */
interface StartedRoles {
  gateway?: GatewayHandle;
  /** Base URL of a worker-only process's `/healthz` + `/metrics` server, when it could listen. */
  workerHttpUrl?: string;
}

async function startRoles(io: CliIo, config: Config, redis: RedisClient, logger: Logger, roles: RunRoles, cleanups: Array<() => Promise<void>>, signal: AbortSignal): Promise<StartedRoles> {
  let gateway: GatewayHandle | undefined;
  let workerHttpUrl: string | undefined;
  // One counter per process, shared by its gateway and worker: the configured models' encodings load now,
  // the others (cl100k_base when no model is GPT-3.5/4) only if a count needs them.
  const tokenCounter = createTokenCounter([config.llm.model, config.llm.summaryModel]);
  // One metrics instance per process: a `start` process's /metrics shows its gateway's and its worker's figures.
  const metrics = createPrometheusMetrics({ build: { version: packageVersion() } });
  // The gateway starts first so it stops last: turns the workers drain on shutdown still get delivered.
  if (roles.gateway) {
    progress(io, 'starting the gateway…');
    // Loaded on use: a worker-only process never loads the channel libraries (discord.js, grammY).
    const { startGateway } = await import('../gateway/index.js');
    // The status report reads channel health, which loads the channel contract: the gateway's alone.
    const { buildStatusReport } = await import('./status-report.js');
    const { readerFor } = await import('./sessions.js');
    const handle = await startGateway({ redis, logger, metrics, tokenCounter, sessions: readerFor(config, { redis }), status: () => buildStatusReport(config, redis), usage: await usageMonitor(config, redis), signal, onProgress: (text) => progress(io, text) }, gatewayOptions(config));
    gateway = handle;
    cleanups.push(() => handle.close());
  }
  if (roles.worker) {
    progress(io, `starting ${config.workers.concurrency} worker slot(s)…`);
    const { runWorker } = await import('../../workers/main.js');
    const worker: RunningWorker = await runWorker({ redis, logger, metrics, tokenCounter }, workerOptions(config));
    cleanups.push(() => worker.close());
    // A worker alone has no gateway HTTP server: its metrics get a server of their own, on a port of
    // their own (never the gateway's: roles run apart on one machine must not clash).
    if (!roles.gateway && config.http.workerPort !== undefined) workerHttpUrl = await startWorkerHttp(io, config, config.http.workerPort, { redis, logger, metrics }, cleanups);
  }
  return { gateway, workerHttpUrl };
}

/**
 * `/healthz`, `/readyz` and `/metrics` of a worker-only process on CHATGATE_HTTP_HOST:`port`
 * (CHATGATE_WORKER_HTTP_PORT). A port already taken (another worker on the same machine) is a
 * warning, not a failure.
 */
async function startWorkerHttp(io: CliIo, config: Config, port: number, deps: { redis: RedisClient; logger: Logger; metrics: PrometheusMetrics }, cleanups: Array<() => Promise<void>>): Promise<string | undefined> {
  const { redis, logger, metrics } = deps;
  const { createWorkerMonitorApp, serveHttp } = await import('../monitor/worker-app.js');
  const app = createWorkerMonitorApp(
    { logger, metrics, checks: { redis: async () => (await redis.ping()) === 'PONG' } },
    { host: config.http.host, monitorToken: config.http.monitorToken },
  );
  try {
    const http = await serveHttp(app, config.http.host, port, config.http.timeouts);
    cleanups.push(() => http.close());
    return http.url;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    io.err(`chatgate: warning: worker metrics not served: ${config.http.host}:${port} is in use (give each worker its own CHATGATE_WORKER_HTTP_PORT, or 0 for any free port)`);
    logger.warn({ host: config.http.host, port }, 'worker metrics server not started: port in use');
    return undefined;
  }
}

/**
 * The ready banner goes to stderr with the other human lines: stdout carries only log lines, so a
 * piped or collected stdout is JSON lines and nothing else (CHATGATE_LOG_FORMAT=auto in a pipe).
 */
function printReady(io: CliIo, config: Config, roles: RunRoles, started: StartedRoles): void {
  const { gateway, workerHttpUrl } = started;
  const lines = [`chatgate ${roleName(roles)} is running${config.demo ? ' in DEMO MODE (offline demo model, not a real LLM)' : ''} — model ${config.llm.model}, context window ${config.llm.contextWindow} tokens.`];
  if (gateway?.webChatUrl) lines.push(`Web chat:  ${gateway.webChatUrl}`);
  // The base URL a client of the OpenAI-compatible API needs, where the README's curl points.
  if (gateway?.api && config.access.apiKeys) lines.push(`API:       ${gateway.api.baseUrl} (OpenAI-compatible, model ${gateway.api.model}, ${countOf(config.access.apiKeys.length, 'key')} in CHATGATE_API_KEYS)`);
  if (gateway) lines.push(`Usage:     ${gateway.httpUrl}/overview`, `Dashboard: ${gateway.httpUrl}/dashboard`, `Metrics:   ${gateway.httpUrl}/metrics`);
  if (roles.worker && !roles.gateway) lines.push(`Worker taking turns from queue prefix ${config.redis.queuePrefix} with concurrency ${config.workers.concurrency}.`);
  if (workerHttpUrl) lines.push(`Health:    ${workerHttpUrl}/healthz`, `Metrics:   ${workerHttpUrl}/metrics`);
  else if (roles.worker && !roles.gateway && config.http.workerPort === undefined) lines.push('No health or metrics server (set CHATGATE_WORKER_HTTP_PORT to serve /healthz, /readyz and /metrics).');
  lines.push('Press Ctrl+C to stop.');
  for (const line of lines) io.err(line);
}

/** Shown when `start` falls back to the demo model because no endpoint or key is configured. */
const NO_LLM_NOTICE = [
  'chatgate: no LLM endpoint is configured (neither OPENAI_BASE_URL nor OPENAI_API_KEY is set),',
  'chatgate: so this run uses the built-in OFFLINE DEMO MODEL. Its replies are scripted, not a real LLM.',
  'chatgate: for real answers set OPENAI_API_KEY (and OPENAI_BASE_URL / CHATGATE_MODEL for other endpoints) in the environment or ./.env.',
].join('\n');

function roleName(roles: RunRoles): string {
  if (roles.gateway && roles.worker) return 'start';
  return roles.gateway ? 'gateway' : 'worker';
}

/** What failed to start, as a sentence names it ("start failed to start" says nothing). */
function startedWhat(roles: RunRoles): string {
  return roles.gateway && roles.worker ? 'the gateway and workers' : roleName(roles);
}

/** The monitor's usage routes: the rollups' read model and, with budgets, their counters. */
async function usageMonitor(config: Config, redis: RedisClient): Promise<UsageMonitorDeps> {
  const { usageReaderFor } = await import('./usage-report.js');
  const ledger = hasBudgets(config.budgets) ? createBudgetLedger(redis, { keyPrefix: config.redis.keyPrefix, settings: config.budgets }) : undefined;
  return { reader: usageReaderFor(config, { redis }), ...(ledger ? { budgets: (subjects) => ledger.statesOf(subjects), budgetBlocks: (subjects) => ledger.blockedOf(subjects), budgetNoticePercent: config.budgets.noticePercent } : {}) };
}
