/**
 * The processes of bench/pipeline: `chatgate gateway` and `chatgate worker` started as users run
 * them — the compiled CLI, `node --enable-source-maps dist/src/cli.js` (what `npm start` and the
 * image run; dist/ is rebuilt first when stale), or with PIPELINE_RUNTIME=tsx the sources through
 * tsx — configured by environment as in production, and what `/proc` says about any process: CPU
 * (utime + stime) and resident memory.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Clock ticks per second of /proc/<pid>/stat (USER_HZ; 100 on Linux). */
const TICKS_PER_S = 100;
/** How the roles run: `compiled` (default) or `tsx` (PIPELINE_RUNTIME), and the node arguments of each. */
const RUNTIMES = {
  compiled: ['--enable-source-maps', 'dist/src/cli.js'],
  tsx: ['--import', 'tsx', 'src/cli.ts'],
} as const;
const RUNTIME = runtimeOf(process.env.PIPELINE_RUNTIME);
let built = false;

/** A running chatgate role. */
export interface RoleProcess {
  role: 'gateway' | 'worker';
  child: ChildProcess;
  pid: number;
  /** From spawn to the ready banner, ms. */
  readyMs: number;
  /** Its inspector's WebSocket address, when started with `--inspect` (see bench/pipeline/heap.ts). */
  inspectorUrl?: string;
  stop(): Promise<void>;
}

/** Starts `chatgate <role>` with `env` and resolves once it prints that it is running. */
export async function startRole(role: 'gateway' | 'worker', env: Record<string, string>, extraNodeArgs: readonly string[] = []): Promise<RoleProcess> {
  // PIPELINE_NODE_ARGS go to each role's node (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` for profiles).
  const nodeArgs = [...(process.env.PIPELINE_NODE_ARGS ?? '').split(' ').filter(Boolean), ...extraNodeArgs];
  if (RUNTIME === 'compiled' && !built) {
    execFileSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT, stdio: 'inherit' });
    built = true;
  }
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, ...RUNTIMES[RUNTIME], '--no-dotenv', role], {
    cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let inspectorLine = '';
  // The log lines are read (and dropped) like a supervisor would: the process pays for writing them.
  child.stdout!.on('data', (chunk: Buffer) => { if (out.length < 65_536) out += chunk.toString('utf8'); });
  child.stderr!.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    if (!inspectorLine && text.includes('Debugger listening')) inspectorLine = text;
    if (err.length < 65_536) err += text;
  });
  const readyMs = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`chatgate ${role} did not start within 60 s:\n${err}`)), 60_000);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`chatgate ${role} exited (${code}) while starting:\n${err}`));
    };
    child.once('exit', onExit);
    const check = () => {
      // The ready banner is on stderr (stdout holds only log lines).
      if (!/is running/.test(err)) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      child.stderr!.off('data', check);
      out = '';
      resolve(performance.now() - spawnedAt);
    };
    child.stderr!.on('data', check);
  });
  let stopping = false;
  // A bench that dies (an uncaught error) takes its roles with it rather than leaving them running.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  child.once('exit', () => process.off('exit', killOnExit));
  child.once('exit', (code, signal) => {
    if (!stopping) process.stderr.write(`bench: chatgate ${role} (pid ${child.pid}) exited during the run (${code ?? signal}):\n${err.slice(-4000)}\n`);
  });
  const inspectorUrl = /Debugger listening on (ws:\/\/\S+)/.exec(inspectorLine)?.[1];
  return {
    role, child, pid: child.pid!, readyMs, ...(inspectorUrl ? { inspectorUrl } : {}),
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** CPU time the process has used so far (user + system), ms. */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
}

/**
 * CPU time the process's live threads have used so far, ms, to the nanosecond (the sum of
 * /proc/<pid>/task/<tid>/schedstat): for rounds too short for `cpuMs`'s 10-ms ticks. Threads
 * that have exited are not counted; Node's threads live as long as the process.
 */
export function cpuExactMs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // The thread exited between the listing and the read.
    }
  }
  return ns / 1e6;
}

/** Resident memory of the process, MiB. */
export function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  return kb / 1024;
}

/** Machine description for the report: CPU model and count, Node, and how the roles run. */
export function machine(): string {
  const info = readFileSync('/proc/cpuinfo', 'utf8');
  const model = /model name\s*:\s*(.+)/.exec(info)?.[1]?.trim() ?? 'unknown CPU';
  const cores = (info.match(/^processor\s*:/gm) ?? []).length;
  return `${cores} × ${model}, Node ${process.version}, ${runtime()}`;
}

/** How the roles run, for the report: `roles compiled (node … dist/src/cli.js)` or `roles through tsx (…)`. */
export function runtime(): string {
  return `roles ${RUNTIME === 'tsx' ? 'through tsx' : 'compiled'} (node ${RUNTIMES[RUNTIME].join(' ')})`;
}

function runtimeOf(value: string | undefined): keyof typeof RUNTIMES {
  if (value === undefined || value === '' || value === 'compiled') return 'compiled';
  if (value === 'tsx') return 'tsx';
  throw new Error(`PIPELINE_RUNTIME must be compiled or tsx (got ${value})`);
}

/** Limits at every budget level, never reached, so each model call reserves and settles (`PIPELINE_BUDGETS=1`, bench `budgets`). */
export const BUDGET_ENV: Readonly<Record<string, string>> = {
  CHATGATE_BUDGET_USER_DAILY_USD: '1000', CHATGATE_BUDGET_CHAT_DAILY_USD: '1000', CHATGATE_BUDGET_DEPLOYMENT_MONTHLY_USD: '100000',
  CHATGATE_BUDGET_USER_DAILY_TOKENS: '1000000000',
};

/**
 * The environment of the bench's gateway (`port` for its HTTP server); a worker takes it with
 * `CHATGATE_HTTP_PORT: '0'`. Keys and queues under `tag`; the rate limit high enough not to be
 * what is measured. `extra` adds or overrides variables.
 */
export function roleEnv(options: { redisUrl: string; llmUrl: string; tag: string; port: number; logLevel?: string }, extra: Record<string, string> = {}): Record<string, string> {
  const { redisUrl, llmUrl, tag, port, logLevel = 'info' } = options;
  return {
    REDIS_URL: redisUrl, CHATGATE_KEY_PREFIX: `${tag}:`, CHATGATE_QUEUE_PREFIX: `{${tag}q}`, OPENAI_BASE_URL: llmUrl, OPENAI_API_KEY: 'bench',
    CHATGATE_MODEL: 'gpt-4o-mini', CHATGATE_LOG_LEVEL: logLevel, CHATGATE_RATE_LIMIT_PER_MINUTE: '10000', CHATGATE_HTTP_PORT: String(port), ...extra,
  };
}
