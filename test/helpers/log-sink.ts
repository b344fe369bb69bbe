import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log.js';

/** A parsed pino line. */
export type LogLine = Record<string, unknown> & { msg: string; level: number };

/** A logger writing into memory, with the parsed lines and a wait for a line. */
export interface LogSink {
  logger: Logger;
  lines: LogLine[];
  /** Resolves with the first line (already written or future) for which `predicate` holds. */
  waitFor(predicate: (line: LogLine) => boolean): Promise<LogLine>;
}

/** Creates a {@link LogSink} at `level` (default `info`). */
export function createLogSink(level = 'info'): LogSink {
  const lines: LogLine[] = [];
  const waiters: Array<{ predicate: (line: LogLine) => boolean; resolve: (line: LogLine) => void }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n')) {
        if (text.trim() === '') continue;
        const line = JSON.parse(text) as LogLine;
        lines.push(line);
        for (const waiter of waiters.splice(0)) {
          if (waiter.predicate(line)) waiter.resolve(line);
          else waiters.push(waiter);
        }
      }
      done();
    },
  });
  return {
    logger: createLogger({ level, destination: stream }),
    lines,
    waitFor(predicate) {
      const found = lines.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
  };
}
