/**
 * What every command needs before it runs: exit codes, I/O, argument parsers. Light on purpose:
 * `src/cli.ts` imports it for `--help`, so it must not reach Redis, the config or the components.
 */
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';

/** Exit codes of every command. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** Where a command writes: results to `out`, progress and errors to `err`. */
export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
  env: Readonly<Record<string, string | undefined>>;
}

/** A failure already explained to the user: the command ends with `exitCode`. */
export class CliExit extends Error {
  constructor(readonly exitCode: number, message = `exit ${exitCode}`) {
    super(message);
    this.name = 'CliExit';
  }
}

/** The process's I/O. */
export function processIo(): CliIo {
  return {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    env: process.env,
  };
}

/** Writes a progress line to stderr. */
export function progress(io: CliIo, text: string): void {
  io.err(`chatgate: ${text}`);
}

/** commander argument parser: an integer in [min, max] (a bad value is a usage error, exit 2). */
export function intOption(min: number, max: number): (value: string) => number {
  return (value: string) => {
    if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError(`must be an integer in [${min}, ${max}]`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`must be an integer in [${min}, ${max}]`);
    return n;
  };
}

/** A message for any thrown value. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** chatgate's version, from its package.json (`unknown` when it cannot be read). */
export function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}
