import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type PinoPretty from 'pino-pretty';

/** Paths whose values never reach a log line. Defined once, here. */
export const REDACT_PATHS: readonly string[] = [
  'token',
  '*.token',
  '*.*.token',
  'apiKey',
  '*.apiKey',
  '*.*.apiKey',
  'password',
  '*.password',
  'secret',
  '*.secret',
  'webhookSecret',
  '*.webhookSecret',
  '*.*.webhookSecret',
  'monitorToken',
  '*.monitorToken',
  '*.*.monitorToken',
  'headers.authorization',
  '*.headers.authorization',
  'headers.cookie',
  '*.headers.cookie',
];

/** How log lines are written: `json` lines (pipes, files, containers) or `pretty`, coloured text for a person at a terminal. */
export type LogFormat = 'json' | 'pretty';

/** The `CHATGATE_LOG_FORMAT` setting: a format, or `auto` (pretty when the output is a terminal). */
export type LogFormatSetting = LogFormat | 'auto';

/** Options of {@link createLogger}. */
export interface LoggerCreateOptions {
  /** Minimum level. Default `info`. */
  level?: LoggerOptions['level'];
  /** Where lines go. Default stdout; tests pass a sink stream and parse the lines. */
  destination?: DestinationStream;
  /** Fields bound on every line. */
  base?: Record<string, unknown>;
  /**
   * `json` (default) or `pretty`. `pretty` writes synchronously; `json` to stdout goes through pino's
   * asynchronous sonic-boom, which pino flushes synchronously on `exit`, so the last line before a
   * crash or `process.exit` is kept too (only a SIGKILL can lose the lines of the current tick).
   * With `pretty` and no `destination`, lines go to stdout.
   */
  format?: LogFormat;
}

/** Fields a pretty line leaves out of its object: the same on every line of a process, or shown before the message. */
const PRETTY_IGNORE = 'pid,hostname,component';

/**
 * The format to use: `pretty` or `json` as set, and for `auto` pretty exactly when the output is
 * a terminal (`isTty`), JSON lines otherwise (a pipe, a file, a container's log collector).
 */
export function resolveLogFormat(setting: LogFormatSetting, isTty: boolean): LogFormat {
  if (setting === 'auto') return isTty ? 'pretty' : 'json';
  return setting;
}

/**
 * Creates the one pino logger of a process; components derive `log.child({ component })`.
 * A child never repeats a key: binding a key its parent already bound (the `llm` component under a
 * worker's `component: 'worker'`) replaces the parent's value in that child's lines, and a line's
 * object leaves out a key bound with the same value.
 */
export function createLogger(options: LoggerCreateOptions = {}): Logger {
  const pinoOptions: LoggerOptions = {
    level: options.level ?? 'info',
    base: options.base ?? {},
    redact: { paths: [...REDACT_PATHS], censor: '[Redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    hooks: { logMethod: dropBoundKeys },
  };
  const destination = options.format === 'pretty' ? prettyStream(options.destination) : options.destination;
  return withUniqueBindings(destination ? pino(pinoOptions, destination) : pino(pinoOptions));
}

/** A logger that writes nothing: the default for library users who pass none. */
export function createSilentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * pino-pretty as a synchronous stream in this thread (not a worker-thread transport): a line is
 * written before `log.x()` returns, so nothing is left in a buffer when the process dies.
 */
function prettyStream(destination: DestinationStream | undefined): DestinationStream {
  // Loaded only here: a process that logs JSON (every one not at a terminal) never pays its import.
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return pretty({
    sync: true,
    destination: destination ?? 1,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: PRETTY_IGNORE,
    messageFormat: '{if component}{component}: {end}{msg}',
    singleLine: true,
  });
}

/** pino's `logMethod` hook: a key of the line's object that the logger already binds with the same value is left out. */
function dropBoundKeys(this: Logger, args: Parameters<Logger['info']>, method: (...args: unknown[]) => void): void {
  const first: unknown = args[0];
  if (first !== null && typeof first === 'object' && !(first instanceof Error) && !Array.isArray(first)) {
    const object = first as Record<string, unknown>;
    const bound = this.bindings();
    const same = Object.keys(object).filter((key) => key in bound && JSON.stringify(bound[key]) === JSON.stringify(object[key]));
    if (same.length > 0) {
      const rest = Object.fromEntries(Object.entries(object).filter(([key]) => !same.includes(key)));
      method.apply(this, [rest, ...args.slice(1)]);
      return;
    }
  }
  method.apply(this, args);
}

type ChildFn = (this: Logger, bindings: Record<string, unknown>, options?: Parameters<Logger['child']>[1]) => Logger;

/**
 * pino appends a child's bindings to its parent's, so a key bound twice appears twice in a line
 * (`"component":"worker",…,"component":"llm"`). Children of `root` drop a key bound again with
 * the same value, and are rebuilt from `root` with the merged bindings when a value differs.
 * pino derives children with `Object.create(parent)`, so every descendant inherits this `child`.
 */
function withUniqueBindings(root: Logger): Logger {
  const pinoChild = root.child as unknown as ChildFn;
  const base = root.bindings();
  const child: ChildFn = function (this: Logger, bindings, options) {
    const bound = this.bindings();
    const fresh: Record<string, unknown> = {};
    let differs = false;
    for (const [key, value] of Object.entries(bindings)) {
      if (!(key in bound)) fresh[key] = value;
      else if (JSON.stringify(bound[key]) !== JSON.stringify(value)) differs = true;
    }
    if (!differs) return pinoChild.call(this, fresh, options);
    const merged = Object.fromEntries(Object.entries({ ...bound, ...bindings }).filter(([key, value]) => !(key in base) || base[key] !== value));
    return pinoChild.call(root, merged, { level: this.level, ...options });
  };
  (root as unknown as { child: ChildFn }).child = child;
  return root;
}

/** A logger made on first use: for lines that are the exception (a child logger per reply or call costs on every one). */
export type LazyLogger = () => Logger;

/** `log.child(bindings)`, derived only when the returned function is first called. */
export function lazyChild(log: Logger, bindings: Record<string, unknown>): LazyLogger {
  let child: Logger | undefined;
  return () => (child ??= log.child(bindings));
}

/** How often a component says Redis is unavailable while an outage lasts, ms. */
export const REDIS_OUTAGE_WARNING_INTERVAL_MS = 30_000;

/** Socket-level failures of a connection: the client reconnects by itself. */
const CONNECTION_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** What ioredis says when Redis cannot answer now: closed, not writable, hung (a command time-out), or retried out. */
const UNAVAILABLE_MESSAGES = /^(Connection is closed\.|Command timed out|Stream isn't writeable|Reached the max retries per request limit)/;

/**
 * Whether `err`, or an error it was caused by, says Redis cannot be reached right now (lost,
 * refused, hung or reconnecting) rather than a fault of the request.
 */
export function isRedisUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if ((code !== undefined && CONNECTION_ERROR_CODES.has(code)) || e.name === 'MaxRetriesPerRequestError' || UNAVAILABLE_MESSAGES.test(e.message)) return true;
  }
  return false;
}

/**
 * A component's log for failures that a Redis outage repeats (a message, a tick, a request): one
 * reporter per component, so an outage is one warning each, not one a failure.
 */
export interface OutageLog {
  /**
   * Logs a failure at warn, unless `fields.err` says Redis is unavailable: then the first one and
   * one per {@link REDIS_OUTAGE_WARNING_INTERVAL_MS} are the warning `Redis unavailable` (what
   * failed, its reason, the failures since the last warning), the others go to debug as they are.
   */
  warn(fields: { err: unknown } & Record<string, unknown>, message: string): void;
  /** {@link OutageLog.warn} at error for a failure that is not an outage. */
  error(fields: { err: unknown } & Record<string, unknown>, message: string): void;
  /** A Redis call of this component succeeded: after an outage it reported, one info line `Redis available again`. */
  available(): void;
}

/** Creates the {@link OutageLog} of the component `log` is bound to. `now` in ms since epoch. */
export function createOutageLog(log: Logger, options: { intervalMs?: number; now?: () => number } = {}): OutageLog {
  const intervalMs = options.intervalMs ?? REDIS_OUTAGE_WARNING_INTERVAL_MS;
  const now = options.now ?? Date.now;
  let since: number | undefined;
  let lastWarnMs: number | undefined;
  let failures = 0;
  const report = (level: 'warn' | 'error', fields: { err: unknown } & Record<string, unknown>, message: string): void => {
    if (!isRedisUnavailable(fields.err)) {
      log[level](fields, message);
      return;
    }
    const at = now();
    since ??= at;
    failures += 1;
    if (lastWarnMs !== undefined && at - lastWarnMs < intervalMs) {
      log.debug(fields, message);
      return;
    }
    log.warn({ during: message, reason: (fields.err as Error).message, failures, outageMs: at - since }, 'Redis unavailable');
    lastWarnMs = at;
    failures = 0;
  };
  return {
    warn: (fields, message) => report('warn', fields, message),
    error: (fields, message) => report('error', fields, message),
    available() {
      if (since === undefined) return;
      log.info({ outageMs: now() - since, failuresSinceLastWarning: failures }, 'Redis available again');
      since = undefined;
      lastWarnMs = undefined;
      failures = 0;
    },
  };
}

/** Lets through one log line per key per interval: for lines a user or a loop could repeat without end. */
export interface LineThrottle {
  /**
   * Whether a line for `key` may be written now. @returns null when not (it is counted), else how
   * many lines of `key` were held back since the last one let through.
   */
  admit(key: string): number | null;
}

/** Keys a {@link LineThrottle} remembers at most; past that the oldest are forgotten. */
const THROTTLE_MAX_KEYS = 10_000;

/** Creates a {@link LineThrottle}: one line per key per `intervalMs`; `now` in ms since epoch. */
export function createLineThrottle(options: { intervalMs: number; now?: () => number; maxKeys?: number }): LineThrottle {
  const now = options.now ?? Date.now;
  const maxKeys = options.maxKeys ?? THROTTLE_MAX_KEYS;
  // Insertion order is the order of the last line let through: the first entries are the oldest.
  const last = new Map<string, { atMs: number; held: number }>();
  return {
    admit(key) {
      const at = now();
      const entry = last.get(key);
      if (entry && at - entry.atMs < options.intervalMs) {
        entry.held += 1;
        return null;
      }
      last.delete(key);
      last.set(key, { atMs: at, held: 0 });
      for (const oldest of last.keys()) {
        if (last.size <= maxKeys) break;
        last.delete(oldest);
      }
      return entry?.held ?? 0;
    },
  };
}

export type { Logger };
