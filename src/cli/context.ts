/** What the commands share once they run: the configuration, loggers and the Redis connection. */
import { Redis } from 'ioredis';
import { loadConfig, type Config } from '../config.js';
import { misspeltOptionWarnings } from '../config-options.js';
import { ConfigError, GatewayError } from '../errors.js';
import { createLogger, resolveLogFormat, type Logger } from '../log.js';
import { coalesceWrites, createRedisCluster, watchConnection, type RedisClient } from '../redis/client.js';
import { resolveRedis, type ResolvedRedis } from '../redis/launcher.js';
import { CliExit, EXIT, progress, type CliIo } from './io.js';

// The light part lives in ./io.js (what `chatgate --help` loads); the commands import both from here.
export { CliExit, errorText, EXIT, intOption, packageVersion, processIo, progress, type CliIo } from './io.js';

/** Where a command's Redis is: what the launcher found, or `cluster` (REDIS_CLUSTER_NODES). */
export interface CliResolvedRedis extends Omit<ResolvedRedis, 'source'> {
  /** `cluster`: a Redis Cluster reached through its seed nodes (`url` lists them); else as {@link ResolvedRedis}. */
  source: ResolvedRedis['source'] | 'cluster';
}

/** A Redis connection for a command, with what it took to get it. */
export interface CliRedis {
  /** One Redis, or a Redis Cluster when REDIS_CLUSTER_NODES is set. */
  redis: RedisClient;
  resolved: CliResolvedRedis;
  /** Closes the connection and stops a redis-server this command started. */
  close(): Promise<void>;
}

/**
 * Loads the configuration with `overrides` on top of the environment; on invalid options prints
 * one line per option and throws {@link CliExit} 1.
 */
export function loadCliConfig(io: CliIo, overrides: Record<string, string | undefined> = {}): Config {
  try {
    return loadConfig({ ...io.env, ...overrides });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.err('chatgate: invalid configuration:');
    for (const issue of err.issues) io.err(`  - ${issue}`);
    io.err('Fix the options above in the environment, .env or the CHATGATE_CONFIG file (docs/operating.md lists every option).');
    throw new CliExit(EXIT.failure);
  }
}

/** One warning line per variable of the environment that looks like a misspelt option: it would be ignored without a word. */
export function warnMisspeltOptions(io: CliIo): void {
  for (const warning of misspeltOptionWarnings(io.env)) io.err(`chatgate: warning: ${warning}; it is ignored`);
}

/**
 * A logger for a role (`start`, `gateway`, `worker`) on stdout at the configured level: coloured
 * text at a terminal, JSON lines otherwise (CHATGATE_LOG_FORMAT).
 */
export function roleLogger(config: Config): Logger {
  return createLogger({ level: config.logLevel, base: { pid: process.pid }, format: resolveLogFormat(config.logFormat, process.stdout.isTTY === true) });
}

/**
 * A quiet logger for operator commands: errors only, each one plain line on stderr
 * (`chatgate: error: <what failed>: <why>`), never a JSON object or a stack. The command's own
 * last line says what to do; the retries and fallbacks on the way are not the operator's business.
 */
export function commandLogger(write: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Logger {
  return createLogger({ level: 'error', destination: { write: (json: string) => write(commandLine(json)) } });
}

/** A pino JSON line as {@link commandLogger}'s plain line. */
function commandLine(json: string): string {
  try {
    const record = JSON.parse(json) as { msg?: string; err?: { message?: string }; reason?: string };
    const why = record.err?.message ?? record.reason;
    return `chatgate: error: ${record.msg ?? 'failed'}${why ? `: ${why}` : ''}`;
  } catch {
    return `chatgate: error: ${json.trim()}`;
  }
}

/** Options of {@link connectRedis}. */
export interface ConnectOptions {
  /** How long a Redis Cluster may take to answer with its slots and `cluster_state:ok`, ms. Default 10 000. */
  clusterReadyTimeoutMs?: number;
}

const CLUSTER_READY_TIMEOUT_MS = 10_000;

/**
 * Finds Redis as `chatgate start` does (REDIS_CLUSTER_NODES, REDIS_URL, the fallback address, the
 * redis-server another chatgate shares, or one started here) and connects. @throws CliExit 1 with
 * the launcher's advice.
 */
export async function connectRedis(io: CliIo, config: Config, logger: Logger, options: ConnectOptions = {}): Promise<CliRedis> {
  if (config.redis.clusterNodes) return connectCluster(io, config.redis.clusterNodes, logger, options.clusterReadyTimeoutMs ?? CLUSTER_READY_TIMEOUT_MS);
  let resolved: ResolvedRedis;
  try {
    resolved = await resolveRedis({ url: config.redis.url, fallbackHost: config.redis.fallbackHost, fallbackPort: config.redis.fallbackPort, stateDir: config.stateDir, logger });
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    io.err(`chatgate: ${err.message}`);
    throw new CliExit(EXIT.failure);
  }
  if (resolved.source === 'spawned') progress(io, `started redis-server (pid ${resolved.pid}) at ${resolved.url} with its data in ${config.stateDir}/redis`);
  const redis = coalesceWrites(new Redis(resolved.url, { maxRetriesPerRequest: null }));
  watchConnection(redis, logger.child({ component: 'redis' }), 'redis connection error');
  return {
    redis,
    resolved,
    async close() {
      await redis.quit().catch(() => redis.disconnect());
      await resolved.stop();
    },
  };
}

/**
 * Connects to a Redis Cluster through its seeds (nothing is started here) and waits until it is
 * ready (slots known, `cluster_state:ok`). @throws CliExit 1 when it is not within `timeoutMs`.
 */
async function connectCluster(io: CliIo, seeds: NonNullable<Config['redis']['clusterNodes']>, logger: Logger, timeoutMs: number): Promise<CliRedis> {
  const url = `redis-cluster://${seeds.map((seed) => `${seed.host.includes(':') ? `[${seed.host}]` : seed.host}:${seed.port}`).join(',')}`;
  const redis = createRedisCluster(seeds);
  let lastError: Error | undefined;
  const remember = (err: Error) => { lastError = err; };
  redis.on('error', remember);
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  redis.off('error', remember);
  if (!ready) {
    redis.disconnect();
    io.err(`chatgate: the Redis Cluster at ${url} was not ready within ${timeoutMs / 1000} s (${lastError?.message ?? 'no answer'}).`);
    io.err('Check REDIS_CLUSTER_NODES, and that every node answers and reports cluster_state:ok (`redis-cli -h <host> -p <port> cluster info`).');
    throw new CliExit(EXIT.failure);
  }
  const outage = watchConnection(redis, logger.child({ component: 'redis' }), 'redis connection error');
  redis.on('node error', (err: Error, node: string) => outage.warn({ err, node }, 'redis cluster node error'));
  return {
    redis,
    resolved: { url, source: 'cluster', stop: async () => undefined },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

