import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve as resolvePath } from 'node:path';
import { Redis } from 'ioredis';
import { GatewayError } from '../errors.js';
import { createSilentLogger, type Logger } from '../log.js';
import { stripUndefined } from '../core/option-checks.js';
import { redactRedisUrl } from './client.js';

/** Options of {@link resolveRedis}. */
export interface ResolveRedisOptions {
  /** `REDIS_URL`. When set it is used or the call fails; nothing else is tried. */
  url?: string;
  /** Address tried when `url` is unset. Default `127.0.0.1`. */
  fallbackHost?: string;
  /** Port tried when `url` is unset. Default 6379. */
  fallbackPort?: number;
  /** State folder; a started redis-server keeps its data in `<stateDir>/redis`. Default `.state`. */
  stateDir?: string;
  logger?: Logger;
  /** Command that starts Redis, looked up on PATH. Default `redis-server`. */
  redisServerCommand?: string;
  /** Time to wait for a connection and PING, ms. Default 2000. */
  connectTimeoutMs?: number;
  /** Time a started redis-server may take to accept connections, ms. Default 15000. */
  startTimeoutMs?: number;
}

/** The Redis chatgate will use. */
export interface ResolvedRedis {
  /** Connection URL. */
  url: string;
  /**
   * `env`: REDIS_URL; `default`: the fallback address answered; `spawned`: a redis-server started
   * here; `reused`: the redis-server another chatgate process started in the same state folder.
   */
  source: 'env' | 'default' | 'spawned' | 'reused';
  /** Process id of the started redis-server (`spawned` only). */
  pid?: number;
  /** Stops the redis-server started here (waits for it to exit); a no-op for the other sources. */
  stop(): Promise<void>;
}

const DEFAULTS = { fallbackHost: '127.0.0.1', fallbackPort: 6379, stateDir: '.state', redisServerCommand: 'redis-server', connectTimeoutMs: 2000, startTimeoutMs: 15_000 };
const START_ATTEMPTS = 3;
/** Redis answered, but refused us: a password is missing or wrong. */
const AUTH_REFUSED = /\b(NOAUTH|WRONGPASS|NOPERM)\b/;
/** Written next to the data of a started redis-server, so other chatgate processes find and share it. */
const STATE_FILE = 'chatgate-redis.json';
const INSTALL_HINT =
  'Install Redis (Debian/Ubuntu: `sudo apt-get install redis-server`; macOS: `brew install redis`), ' +
  'run one with Docker (`docker run -d -p 6379:6379 redis:7-alpine`), or set REDIS_URL.';

/**
 * Finds the Redis to use: `url` if set (unreachable → error); else the fallback address if it
 * answers PING; else a `redis-server` from PATH started on a free loopback port with
 * `--dir <stateDir>/redis`, stopped by `stop()` or when this process exits. Another chatgate
 * process resolving with the same state folder meanwhile shares that server (`reused`) instead of
 * starting a second one on the same data.
 * @throws GatewayError `REDIS_UNREACHABLE` (url set but not answering), `REDIS_NOT_FOUND` (no
 * Redis and no redis-server on PATH), `REDIS_START_FAILED` (redis-server would not start).
 */
export async function resolveRedis(options: ResolveRedisOptions = {}): Promise<ResolvedRedis> {
  const o = { ...DEFAULTS, ...stripUndefined(options) };
  const log = (options.logger ?? createSilentLogger()).child({ component: 'redis-launcher' });
  const noop = async () => {};
  if (o.url) {
    const failure = await pingRedis(o.url, o.connectTimeoutMs);
    if (failure && AUTH_REFUSED.test(failure)) throw new GatewayError('REDIS_UNREACHABLE', `REDIS_URL ${redactRedisUrl(o.url)} refused the connection: ${/WRONGPASS/.test(failure) ? 'wrong user name or password' : 'it needs a password'}; put the password in REDIS_URL (redis://:password@host:port, or redis://user:password@host:port)`);
    if (failure) throw new GatewayError('REDIS_UNREACHABLE', `REDIS_URL ${redactRedisUrl(o.url)} is not reachable (${failure}); start Redis there or unset REDIS_URL to use a local one`);
    return { url: o.url, source: 'env', stop: noop };
  }
  const fallbackUrl = `redis://${o.fallbackHost}:${o.fallbackPort}`;
  if (!(await pingRedis(fallbackUrl, o.connectTimeoutMs))) {
    log.info({ url: fallbackUrl }, 'using redis at the default address');
    return { url: fallbackUrl, source: 'default', stop: noop };
  }
  const dir = resolvePath(o.stateDir, 'redis');
  mkdirSync(dir, { recursive: true });
  const shared = await findSharedServer(dir, o.connectTimeoutMs, log);
  if (shared) {
    log.info({ url: shared, dir }, 'using the redis-server another chatgate process started');
    return { url: shared, source: 'reused', stop: noop };
  }
  let lastError: unknown;
  for (let attempt = 1; attempt <= START_ATTEMPTS; attempt += 1) {
    try {
      return await startRedisServer(o.redisServerCommand, dir, o.startTimeoutMs, log);
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'REDIS_NOT_FOUND') {
        throw new GatewayError('REDIS_NOT_FOUND', `no Redis found: nothing answers at ${o.fallbackHost}:${o.fallbackPort} and \`${o.redisServerCommand}\` is not on PATH. ${INSTALL_HINT}`);
      }
      lastError = err;
      log.warn({ err, attempt }, 'redis-server did not start');
    }
  }
  const why = lastError instanceof Error ? lastError.message : String(lastError);
  throw new GatewayError('REDIS_START_FAILED', `could not start ${o.redisServerCommand} with its data in ${dir} (${why}). ${INSTALL_HINT}`, { cause: lastError });
}

/** PINGs a Redis; resolves undefined when it answers, else the reason it did not. */
export async function pingRedis(url: string, timeoutMs = 2000): Promise<string | undefined> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  let socketError: string | undefined;
  client.on('error', (err: Error) => {
    socketError ??= err.message; // more telling than the "Connection is closed." the promise gets
  });
  try {
    await client.connect();
    await client.ping();
    return undefined;
  } catch (err) {
    return socketError ?? (err instanceof Error ? err.message : String(err));
  } finally {
    client.disconnect();
  }
}

async function startRedisServer(command: string, dir: string, timeoutMs: number, log: Logger): Promise<ResolvedRedis> {
  const port = await freeLoopbackPort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no', '--appendonly', 'yes', '--protected-mode', 'yes'];
  // Its own process group: a terminal's Ctrl+C reaches chatgate only, which drains its turns and
  // then stops this server itself. A watchdog stops it when chatgate dies any other way.
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  await waitUntilReady(child, timeoutMs);
  const watchdog = startWatchdog(child.pid!);
  const url = `redis://127.0.0.1:${port}`;
  const stateFile = join(dir, STATE_FILE);
  writeFileSync(stateFile, JSON.stringify({ pid: child.pid, port, ownerPid: process.pid }));
  const killOnExit = () => {
    child.kill('SIGTERM');
    rmSync(stateFile, { force: true });
  };
  process.once('exit', killOnExit);
  log.info({ port, dir, pid: child.pid }, 'started embedded redis-server');
  return {
    url,
    source: 'spawned',
    pid: child.pid,
    stop: async () => {
      process.removeListener('exit', killOnExit);
      watchdog.kill('SIGKILL');
      await stopChild(child);
      rmSync(stateFile, { force: true });
      log.info({ port }, 'stopped embedded redis-server');
    },
  };
}

/**
 * A watchdog process holding a pipe from this one: when the pipe closes — this process exited,
 * even by SIGKILL — it stops the redis-server `pid` (SIGTERM: AOF flushed) and exits.
 */
function startWatchdog(pid: number): ChildProcess {
  const watchdog = spawn(process.execPath, ['-e', WATCHDOG_SCRIPT, String(pid)], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  watchdog.unref();
  (watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  watchdog.on('error', () => undefined);
  return watchdog;
}

const WATCHDOG_SCRIPT = [
  'const pid = Number(process.argv[1]);',
  "process.on('SIGINT', () => undefined);",
  'process.stdin.resume();',
  "process.stdin.on('close', () => { try { process.kill(pid, 'SIGTERM'); } catch {} process.exit(0); });",
].join('\n');

/**
 * The URL of a live redis-server recorded in `dir` by another chatgate process that still runs,
 * if any. One whose owner is gone (left behind by an earlier run) is shut down, not reused.
 */
async function findSharedServer(dir: string, timeoutMs: number, log: Logger): Promise<string | undefined> {
  let record: { port?: unknown; ownerPid?: unknown };
  try {
    record = JSON.parse(readFileSync(join(dir, STATE_FILE), 'utf8')) as typeof record;
  } catch {
    return undefined;
  }
  if (typeof record.port !== 'number') return undefined;
  const url = `redis://127.0.0.1:${record.port}`;
  if ((await pingRedis(url, timeoutMs)) !== undefined) return undefined;
  if (typeof record.ownerPid === 'number' && isRunning(record.ownerPid)) return url;
  // Only the server of this folder: the port may belong to another Redis by now.
  if (!(await shutdownRedis(url, dir, timeoutMs))) return undefined;
  rmSync(join(dir, STATE_FILE), { force: true });
  log.warn({ url, dir }, 'stopped a redis-server left behind by an earlier run');
  return undefined;
}

/**
 * Asks the Redis at `url` to shut down (saving its AOF) when its data folder is `dir`, and waits
 * until it no longer answers. @returns false (nothing done) when it keeps its data elsewhere.
 */
async function shutdownRedis(url: string, dir: string, timeoutMs: number): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const [, serverDir] = (await client.config('GET', 'dir')) as [string, string];
    if (resolvePath(serverDir) !== resolvePath(dir)) return false;
    await client.shutdown().catch(() => undefined); // the connection drops as it goes
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
  for (let waited = 0; waited < timeoutMs && (await pingRedis(url, 200)) === undefined; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function waitUntilReady(child: ChildProcess, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error(`not ready after ${timeoutMs} ms`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-2000);
      if (/ready to accept connections/i.test(output)) done();
    };
    const onExit = (code: number | null) => fail(new Error(`exited with code ${code}: ${lastLine(output)}`));
    const onError = (err: NodeJS.ErrnoException) =>
      fail(err.code === 'ENOENT' ? new GatewayError('REDIS_NOT_FOUND', 'redis-server not found') : err);
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
    function cleanup() {
      clearTimeout(timer);
      child.off('exit', onExit);
      child.off('error', onError);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.stdout?.resume(); // keep draining so the child never blocks on a full pipe
      child.stderr?.resume();
    }
    function done() {
      cleanup();
      resolve();
    }
    function fail(err: Error) {
      cleanup();
      if (child.exitCode === null && child.pid !== undefined) child.kill('SIGKILL');
      reject(err);
    }
  });
}

function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}


function lastLine(text: string): string {
  return text.trim().split('\n').pop() ?? '';
}

