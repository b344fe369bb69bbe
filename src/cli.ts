/**
 * `chatgate`: the composition root and operator CLI — the only module that wires the gateway,
 * workers, monitor, Redis and the LLM endpoint together. Exit codes: 0 ok, 1 failure, 2 usage error.
 */
import { existsSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { CliExit, errorText, EXIT, intOption, packageVersion, processIo, type CliIo } from './cli/io.js';
import type { SessionsFlags } from './cli/sessions.js';
import type { UsageReportFlags } from './cli/usage-report.js';
import { USAGE_DIMENSIONS } from './usage/read-model.js';
import { addBudgetsCommand } from './cli/budgets-command.js';

// Command modules load on use: `chatgate sessions` never loads the gateway, channels or workers.
const roles = () => import('./cli/run.js');
const sessions = () => import('./cli/sessions.js');
const maintenance = () => import('./cli/maintenance.js');
const doctor = () => import('./cli/doctor.js');
const failed = () => import('./cli/failed.js');
const status = () => import('./cli/status.js');
const usageReport = () => import('./cli/usage-report.js');

/** Options of {@link createProgram}. */
export interface ProgramOptions {
  io?: CliIo;
  /** Resolves when a running role should stop. Default: the first SIGINT or SIGTERM (`waitForStopSignal`). */
  stopSignal?: () => Promise<string>;
  /** Receives each command's exit code. */
  onExit: (code: number) => void;
}

/** Builds the commander program; each action reports its exit code through `onExit`. */
export function createProgram(options: ProgramOptions): Command {
  const io = options.io ?? processIo();
  const program = new Command('chatgate')
    .description('Multi-channel chat-bot gateway with session hygiene. Configuration comes from the environment (docs/operating.md).')
    .showHelpAfterError('(run `chatgate --help` for the commands)')
    .version(packageVersion(), '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) })
    .option('--dotenv <path>', 'read options from this file (default: ./.env when it exists; the environment wins)')
    .option('--no-dotenv', 'do not read ./.env')
    .hook('preAction', () => loadEnvFile(io, program.opts<{ dotenv?: string | false }>().dotenv));
  const run = (action: () => Promise<number>) => action().then(options.onExit);
  addRoleCommands(program, io, options.stopSignal, run);
  addSessionCommands(program, io, run);
  addBudgetsCommand(program, io, run);
  program.command('doctor').description('check configuration, Redis, queues, workers, the LLM endpoint and bot tokens')
    .option('--telegram-api-root <url>', 'Telegram Bot API root (default TELEGRAM_API_ROOT)')
    .option('--discord-api-root <url>', 'Discord REST API root (default DISCORD_API_ROOT)')
    .option('--json', 'print JSON')
    .action((flags: { telegramApiRoot?: string; discordApiRoot?: string; json?: boolean }) => run(async () => (await doctor()).doctorCommand(io, flags)));
  program.command('status').description('what runs and how it stands: gateway, workers, channels, LLM, queues, failed messages, full sessions (exit 1 when something is down)')
    .option('--json', 'print JSON')
    .action((flags: { json?: boolean }) => run(async () => (await status()).statusCommand(io, flags)));
  pointHelpAt(program.commands, 'chatgate');
  return program;
}

/** Makes a flag error under a command name that command's help (`chatgate budgets set --help`), not the program's. */
function pointHelpAt(commands: readonly Command[], parent: string): void {
  for (const command of commands) {
    const path = `${parent} ${command.name()}`;
    command.showHelpAfterError(`(run \`${path} --help\` for its ${command.commands.length > 0 ? 'commands' : 'options'})`);
    pointHelpAt(command.commands, path);
  }
}

type Runner = (action: () => Promise<number>) => Promise<void>;

/** `start`, `gateway`, `worker`: the long-running roles. */
function addRoleCommands(program: Command, io: CliIo, stop: (() => Promise<string>) | undefined, run: Runner): void {
  const runRoles = async (which: { gateway: boolean; worker: boolean }, flags: { demo?: boolean; concurrency?: number }) => {
    const module = await roles();
    return module.runRoles(io, which, flags, stop ?? module.waitForStopSignal);
  };
  const concurrency = () => new Option('--concurrency <n>', 'turns the in-process worker runs at once (default CHATGATE_WORKER_CONCURRENCY)').argParser(intOption(1, 256));
  program.command('start').description('run the gateway, workers and monitor in one process')
    .option('--demo', 'use the built-in offline demo model instead of an LLM endpoint')
    .addOption(concurrency())
    .action((flags: { demo?: boolean; concurrency?: number }) => run(() => runRoles({ gateway: true, worker: true }, flags)));
  program.command('gateway').description('run the gateway alone: channels, ingest, hygiene, delivery, web chat and monitor')
    .option('--demo', 'use the built-in offline demo model (for hygiene summaries)')
    .action((flags: { demo?: boolean }) => run(() => runRoles({ gateway: true, worker: false }, flags)));
  program.command('worker').description('run an agent worker alone (start as many as you like)')
    .option('--demo', 'use the built-in offline demo model')
    .addOption(concurrency())
    .action((flags: { demo?: boolean; concurrency?: number }) => run(() => runRoles({ gateway: false, worker: true }, flags)));
}

/** `sessions`, `usage`, `compact`, `transcript`, `reset`, `failed`, `retry`: operator commands on sessions. */
function addSessionCommands(program: Command, io: CliIo, run: Runner): void {
  program.command('sessions').description('list sessions: channel, messages, context fill, tokens, cost, compactions')
    .addOption(new Option('--sort <key>', 'order by last activity or context fill').choices(['activity', 'fill']).default('activity'))
    .option('--json', 'print JSON')
    .addOption(new Option('--limit <n>', 'at most this many sessions').argParser(intOption(1, 100_000)).default(50))
    .action((flags: SessionsFlags) => run(async () => (await sessions()).sessionsCommand(io, flags)));
  program.command('usage').description('usage over time by user, chat, channel or model; with a session: its ledger and context fill').argument('[session]', 'session id, e.g. web:abc')
    .option('--since <span>', 'Nd (today and the days before, UTC), Nh (hours) or YYYY-MM-DD', '7d').addOption(new Option('--by <dimension>', 'group by').choices(USAGE_DIMENSIONS).default('user'))
    .option('--json', 'print JSON').option('--csv', 'print CSV')
    .action((session: string | undefined, flags: UsageReportFlags) => run(async () => (session ? (await sessions()).usageCommand(io, session, flags) : (await usageReport()).usageReportCommand(io, flags))));
  program.command('compact').description('compact a session now (layer manual), under its lease').argument('<session>', 'session id')
    .option('--focus <text>', 'what the summary should keep in detail')
    .action((session: string, flags: { focus?: string }) => run(async () => (await maintenance()).compactCommand(io, session, flags)));
  program.command('transcript').description('print the full transcript of a session (every message and compaction)').argument('<session>', 'session id')
    .option('--jsonl', 'one JSON entry per line')
    .action((session: string, flags: { jsonl?: boolean }) => run(async () => (await sessions()).transcriptCommand(io, session, flags)));
  program.command('reset').description('start a session over: empty projection, fresh compaction state (the transcript keeps everything)').argument('<session>', 'session id')
    .action((session: string) => run(async () => (await maintenance()).resetCommand(io, session)));
  program.command('failed').description('list the messages of turns that failed for good (the dead letters), oldest first').argument('<session>', 'session id')
    .option('--json', 'print JSON')
    .action((session: string, flags: { json?: boolean }) => run(async () => (await failed()).failedCommand(io, session, flags)));
  program.command('retry').description('put a session\'s failed messages back at the front of its inbox and enqueue a turn').argument('<session>', 'session id')
    .action((session: string) => run(async () => (await failed()).retryCommand(io, session)));
}

/**
 * Runs the CLI on `argv` (as in `process.argv`). @returns the exit code: 0 ok, 1 failure,
 * 2 usage error (help and version are 0).
 */
export async function runCli(argv: readonly string[], options: Omit<ProgramOptions, 'onExit'> = {}): Promise<number> {
  const io = options.io ?? processIo();
  let code: number = EXIT.ok;
  const program = createProgram({ ...options, io, onExit: (c) => { code = c; } });
  if (argv.length <= 2) {
    program.outputHelp();
    return EXIT.usage;
  }
  try {
    await program.parseAsync(argv as string[]);
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof CliExit) return err.exitCode;
    io.err(`chatgate: ${errorText(err)}`);
    return EXIT.failure;
  }
}

/** Loads `.env`-style options into the environment (never overriding a variable already set). */
function loadEnvFile(io: CliIo, choice: string | false | undefined): void {
  if (choice === false || io.env !== process.env) return;
  const path = choice ?? '.env';
  if (!existsSync(path)) {
    if (choice === undefined) return;
    io.err(`chatgate: the env file ${path} does not exist`);
    throw new CliExit(EXIT.failure);
  }
  try {
    process.loadEnvFile(path);
  } catch (err) {
    io.err(`chatgate: could not read the env file ${path} (${errorText(err)})`);
    throw new CliExit(EXIT.failure);
  }
}

/**
 * A reader that stops reading (`chatgate transcript <s> | head`) ends the command quietly, exit 0.
 * A promise rejection nobody handles is a bug in a code path that should have handled it: it is
 * fatal, with one line and the stack on stderr and exit 1, so a supervisor restarts a clean process
 * (every state worth keeping is in Redis). Rejections a channel operation may raise are handled
 * where the operation runs (docs/operating.md).
 */
function handleProcessFailures(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  process.on('unhandledRejection', (reason) => {
    process.stderr.write(`chatgate: fatal: an unhandled promise rejection (a bug): ${reason instanceof Error ? reason.stack ?? reason.message : String(reason)}\n`);
    process.exit(1);
  });
}

function isMain(): boolean {
  if (!process.argv[1]) return false;
  try {
    return realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  handleProcessFailures();
  process.exitCode = await runCli(process.argv);
  // Sockets of libraries closed late must not keep a finished command alive.
  setTimeout(() => process.exit(process.exitCode), 200).unref();
}
