import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

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

/** Options of {@link createLogger}. */
export interface LoggerCreateOptions {
  /** Minimum level. Default `info`. */
  level?: LoggerOptions['level'];
  /** Where lines go. Default stdout; tests pass a sink stream and parse the lines. */
  destination?: DestinationStream;
  /** Fields bound on every line. */
  base?: Record<string, unknown>;
}

/** Creates the one pino logger of a process; components derive `log.child({ component })`. */
export function createLogger(options: LoggerCreateOptions = {}): Logger {
  const pinoOptions: LoggerOptions = {
    level: options.level ?? 'info',
    base: options.base ?? {},
    redact: { paths: [...REDACT_PATHS], censor: '[Redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return options.destination ? pino(pinoOptions, options.destination) : pino(pinoOptions);
}

/** A logger that writes nothing: the default for library users who pass none. */
export function createSilentLogger(): Logger {
  return pino({ level: 'silent' });
}

export type { Logger };
