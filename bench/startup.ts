/**
 * `npm run bench -- startup` (only when named: it starts processes against Redis): the CPU a
 * `chatgate` process spends to start, as user + system time of the child. `--help`, two read-only
 * commands (`sessions`, `status`) until they exit, and the roles `worker` and `gateway` until their
 * ready banner. Median of STARTUP_RUNS runs (default 7), compiled as `chatgate` runs it.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeKeys } from './pipeline/ingest.js';
import { startBenchLlm } from './pipeline/fake-llm.js';
import { cpuMs, machine, roleEnv, startRole } from './pipeline/procs.js';
import { startBenchRedis } from './pipeline/redis.js';
import { median, printTable } from './util.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RUNS = Number(process.env.STARTUP_RUNS ?? 7);

/**
 * Preloaded into each command: writes the process's CPU time (user + system, every thread, from
 * process start) to the file STARTUP_CPU_FILE names when it exits. Its own cost is a few µs.
 */
const CPU_PRELOAD = `data:text/javascript,${encodeURIComponent(
  "import { writeFileSync } from 'node:fs'; process.on('exit', () => { const u = process.cpuUsage(); writeFileSync(process.env.STARTUP_CPU_FILE, String((u.user + u.system) / 1000)); });",
)}`;

interface Figure {
  what: string;
  cpu: number[];
  wall: number[];
}

/** Runs the startup benchmark and prints its table. */
export async function runStartupBench(): Promise<void> {
  const redis = await startBenchRedis(process.env.REDIS_URL);
  const llm = await startBenchLlm();
  const tag = `bench-startup-${process.pid}`;
  const env = roleEnv({ redisUrl: redis.url, llmUrl: llm.baseURL, tag, port: 0, logLevel: 'warn' });
  const dir = mkdtempSync(join(tmpdir(), 'chatgate-startup-'));
  const figures: Figure[] = [
    { what: 'chatgate --help', cpu: [], wall: [] },
    { what: 'chatgate sessions', cpu: [], wall: [] },
    { what: 'chatgate status', cpu: [], wall: [] },
    { what: 'chatgate worker (to ready)', cpu: [], wall: [] },
    { what: 'chatgate gateway (to ready)', cpu: [], wall: [] },
  ];
  try {
    // startRole builds dist/ when stale: the first role starts before any figure is taken.
    await (await startRole('worker', env)).stop();
    for (let run = 0; run < RUNS; run++) {
      // Interleaved, so the machine's drifting load falls on every figure alike.
      for (const [i, args] of [['--help'], ['sessions'], ['status']].entries()) {
        const { cpu, wall } = await commandCpu(args, env, join(dir, 'cpu'));
        figures[i].cpu.push(cpu);
        figures[i].wall.push(wall);
      }
      for (const [i, role] of [[3, 'worker'], [4, 'gateway']] as const) {
        const started = await startRole(role, env);
        figures[i].cpu.push(cpuMs(started.pid));
        figures[i].wall.push(started.readyMs);
        await started.stop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await llm.close();
    if (!redis.private) await removeKeys(redis, tag);
    await redis.close();
  }
  console.log(`\nstartup CPU of chatgate processes, median of ${RUNS} runs (${machine()})`);
  const range = (values: number[]) => `${Math.round(Math.min(...values))}–${Math.round(Math.max(...values))}`;
  printTable(['process', 'CPU ms (user+sys)', 'CPU range', 'wall ms'], figures.map((f) => [f.what, Math.round(median(f.cpu)), range(f.cpu), Math.round(median(f.wall))]));
}

/** Runs `chatgate <args>` to its exit. @returns its CPU time and wall time, ms. */
async function commandCpu(args: string[], env: Record<string, string>, cpuFile: string): Promise<{ cpu: number; wall: number }> {
  rmSync(cpuFile, { force: true });
  const startedAt = performance.now();
  const child = spawn(process.execPath, ['--import', CPU_PRELOAD, '--enable-source-maps', 'dist/src/cli.js', '--no-dotenv', ...args], {
    cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, STARTUP_CPU_FILE: cpuFile }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString('utf8'); });
  const [code] = await once(child, 'exit') as [number | null];
  const wall = performance.now() - startedAt;
  // status exits 1 when something is down (here: no gateway runs); any other failure is the bench's.
  if (code !== 0 && !(args[0] === 'status' && code === 1)) throw new Error(`chatgate ${args.join(' ')} exited ${code}:\n${err}`);
  return { cpu: Number(readFileSync(cpuFile, 'utf8')), wall };
}
