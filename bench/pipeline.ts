/**
 * bench/pipeline: the whole message path end to end — a private redis-server (or `REDIS_URL`),
 * `chatgate gateway` and 1, then 2 `chatgate worker` processes against a 0-ms OpenAI-compatible
 * fake, messages posted to the web chat API and their replies read by its long poll. Prints msg/s
 * (closed loop), CPU ms per message per role (from /proc), Redis commands per message (INFO
 * commandstats), p50/p99 post → reply at half the peak (open loop), RSS per role, and in-process
 * ingest against raw BullMQ `queue.add` at concurrency 1 and 50. Sizes: PIPELINE_MESSAGES
 * (default 2000 per peak), PIPELINE_SESSIONS (default 50), PIPELINE_LATENCY_S (default 5);
 * PIPELINE_MONITOR=1 (or `detail`) adds a MONITOR phase naming the commands and scripts per message;
 * REDIS_CLUSTER_NODES adds the share of commands per cluster master with 1 and 12 queue shards.
 */
import { availableParallelism } from 'node:os';
import { createRedis } from '../src/redis/client.js';
import { removeKeys, runIngestComparison, type IngestFigure } from './pipeline/ingest.js';
import { startBenchLlm } from './pipeline/fake-llm.js';
import { createWebClient, type LoadResult } from './pipeline/load.js';
import { runSweeperCapacity } from './pipeline/sweeper.js';
import { printClusterShare, runClusterShare } from './pipeline/cluster-share.js';
import { startMonitor } from './pipeline/monitor.js';
import { BUDGET_ENV, cpuMs, machine, roleEnv, rssMiB, startRole, type RoleProcess } from './pipeline/procs.js';
import { commandStats, freePort, resetStats, startBenchRedis, type BenchRedis, type CommandStat } from './pipeline/redis.js';
import { percentile, printTable } from './util.js';

const MESSAGES = Number(process.env.PIPELINE_MESSAGES ?? 2000);
const SESSIONS = Number(process.env.PIPELINE_SESSIONS ?? 50);
const LATENCY_S = Number(process.env.PIPELINE_LATENCY_S ?? 5);
/** PIPELINE_RATE: the open loop's arrivals a second (default: half the 2-worker peak), to compare runs at one load. */
const OPEN_RATE = Number(process.env.PIPELINE_RATE ?? 0);
/** PIPELINE_MONITOR_RATE: the MONITOR phase as an open loop at this many messages a second (default: closed loop). */
const MONITOR_RATE = Number(process.env.PIPELINE_MONITOR_RATE ?? 0);
const INGEST_MESSAGES = Number(process.env.PIPELINE_INGEST_MESSAGES ?? 1500);
/** PIPELINE_BUDGETS=1: limits at every level (never reached), so each model call reserves and settles. */
const BUDGETS = process.env.PIPELINE_BUDGETS === '1';

/** One measured phase: the load's result, CPU per role and Redis's command counts. */
interface Phase {
  name: string;
  load: LoadResult;
  cpu: { gateway: number; worker: number; redis?: number; client: number };
  stats: CommandStat[];
}

export async function runPipelineBench(): Promise<void> {
  const started = performance.now();
  const redis = await startBenchRedis(process.env.REDIS_URL);
  const llm = await startBenchLlm();
  const tag = `bench-pipe-${process.pid}`;
  const port = await freePort();
  const env = roleEnv({ redisUrl: redis.url, llmUrl: llm.baseURL, tag, port }, BUDGETS ? BUDGET_ENV : {});
  const workerEnv = { ...env, CHATGATE_HTTP_PORT: '0' };
  const roles: RoleProcess[] = [];
  try {
    const gateway = await startRole('gateway', env);
    roles.push(gateway);
    roles.push(await startRole('worker', workerEnv));
    await sleep(4000); // settled: start-up garbage collected
    const idleRss = { gateway: rssMiB(gateway.pid), worker: rssMiB(roles[1]!.pid) };
    const client = createWebClient(`http://127.0.0.1:${port}`, `${tag}`);
    await client.closedLoop(16, 300); // warm-up: JIT, scripts, connections
    const one = await measure('1 worker', redis, roles, () => client.closedLoop(SESSIONS, MESSAGES));
    roles.push(await startRole('worker', workerEnv));
    await client.closedLoop(16, 200);
    const two = await measure('2 workers', redis, roles, () => client.closedLoop(SESSIONS, MESSAGES));
    const rate = OPEN_RATE > 0 ? OPEN_RATE : Math.max(20, Math.floor(two.load.messages / two.load.seconds / 2));
    const open = await measure(`2 workers, open loop ${rate}/s`, redis, roles, () => client.openLoop(rate, LATENCY_S));
    const rss = roles.map((r) => ({ role: r.role, mib: rssMiB(r.pid) }));
    if (process.env.PIPELINE_MONITOR) await monitored(redis, () => (MONITOR_RATE > 0 ? client.openLoop(MONITOR_RATE, 500 / MONITOR_RATE) : client.closedLoop(SESSIONS, 500)));
    for (const role of roles.splice(0).reverse()) await role.stop();
    const base = createRedis(redis.url);
    const ingest = await runIngestComparison(redis, base, llm.baseURL, INGEST_MESSAGES);
    const sweeper = await runSweeperCapacity(base, tag);
    for (const prefix of [tag, `${tag}-sweep`]) await removeKeys(redis, prefix);
    base.disconnect();
    report({ phases: [one, two, open], idleRss, rss, ingest, sweeper, redis, seconds: (performance.now() - started) / 1000 });
    // REDIS_CLUSTER_NODES: how evenly the masters of a cluster share the load, unsharded and with 12 queue shards.
    if (process.env.REDIS_CLUSTER_NODES) printClusterShare(await runClusterShare(process.env.REDIS_CLUSTER_NODES, llm.baseURL));
  } finally {
    for (const role of roles.reverse()) await role.stop().catch(() => undefined);
    await llm.close();
    await redis.close();
  }
}

async function measure(name: string, redis: BenchRedis, roles: RoleProcess[], run: () => Promise<LoadResult>): Promise<Phase> {
  await resetStats(redis.admin);
  const before = cpuOf(redis, roles);
  const load = await run();
  const after = cpuOf(redis, roles);
  const stats = (await commandStats(redis.admin)).filter((s) => !['config', 'info'].includes(s.command));
  const per = (key: 'gateway' | 'worker' | 'redis' | 'client') => (after[key] === undefined || before[key] === undefined ? undefined : (after[key] - before[key]) / load.messages);
  return { name, load, cpu: { gateway: per('gateway')!, worker: per('worker')!, redis: per('redis'), client: per('client')! }, stats };
}

/** The commands clients sent during `run`, per message, by name (scripts by their names). */
async function monitored(redis: BenchRedis, run: () => Promise<LoadResult>): Promise<void> {
  const monitor = await startMonitor(redis.admin, process.env.PIPELINE_MONITOR === 'detail');
  const load = await run();
  const counts = [...(await monitor.stop()).entries()].sort((a, b) => b[1] - a[1]);
  const sent = counts.filter(([name]) => !name.startsWith('  inside')).reduce((sum, [, n]) => sum + n, 0);
  console.log(`\nMONITOR (2 workers, ${MONITOR_RATE > 0 ? `open loop ${MONITOR_RATE}/s` : 'closed loop'}, ${load.messages} messages): ${(sent / load.messages).toFixed(1)} commands sent per message (and those their scripts ran):`);
  printTable(['command', 'per msg'], counts.slice(0, process.env.PIPELINE_MONITOR === 'detail' ? undefined : 60).map(([name, n]) => [name, (n / load.messages).toFixed(2)]));
  if (process.env.PIPELINE_MONITOR === 'detail') printBySource(counts, load.messages);
}

/** Detail: each script call and plain command with the commands its scripts ran, per message, the costliest first. */
function printBySource(counts: Array<[string, number]>, messages: number): void {
  const bySource = new Map<string, { calls: number; inside: number }>();
  const of = (name: string) => bySource.get(name) ?? bySource.set(name, { calls: 0, inside: 0 }).get(name)!;
  for (const [name, n] of counts) {
    const inside = /^ {2}inside (.*?)(: [a-z]+)?$/.exec(name);
    if (inside) of(inside[1]!).inside += n;
    else of(name).calls += n;
  }
  const rows = [...bySource.entries()].map(([name, c]) => ({ name, ...c, total: c.calls + c.inside })).sort((a, b) => b.total - a.total);
  const total = rows.reduce((sum, r) => sum + r.total, 0);
  console.log(`\nBy source: ${(total / messages).toFixed(1)} commands per message in all (sent + run inside scripts):`);
  const f = (n: number) => (n / messages).toFixed(2);
  printTable(['sent command or script', 'calls/msg', 'inside/msg', 'total/msg', 'inside/call'], rows.map((r) => [r.name, f(r.calls), f(r.inside), f(r.total), r.calls > 0 ? (r.inside / r.calls).toFixed(1) : '-']));
}

/** CPU ms so far of each role (workers summed), of Redis, and of this process (the web client and the fake LLM). */
function cpuOf(redis: BenchRedis, roles: RoleProcess[]): { gateway: number; worker: number; redis?: number; client: number } {
  const sum = (role: string) => roles.filter((r) => r.role === role).reduce((total, r) => total + cpuMs(r.pid), 0);
  const own = process.cpuUsage();
  return { gateway: sum('gateway'), worker: sum('worker'), redis: redis.pid === undefined ? undefined : cpuMs(redis.pid), client: (own.user + own.system) / 1000 };
}

interface Report {
  phases: Phase[];
  idleRss: { gateway: number; worker: number };
  rss: Array<{ role: string; mib: number }>;
  ingest: IngestFigure[];
  sweeper: Awaited<ReturnType<typeof runSweeperCapacity>>;
  redis: BenchRedis;
  seconds: number;
}

function report(r: Report): void {
  const f = (n: number | undefined, digits = 2) => (n === undefined || !Number.isFinite(n) ? 'n/a' : n.toFixed(digits));
  console.log(`\npipeline: ${machine()}; budgets ${BUDGETS ? 'on (a limit at every level)' : 'off'}; Redis ${r.redis.private ? 'private redis-server' : 'REDIS_URL (shared: counts include other clients)'}; ${MESSAGES} messages over ${SESSIONS} sessions per peak`);
  console.log('Throughput is noisy on a shared machine; CPU ms per message per process is the robust figure.\n');
  printTable(['phase', 'msg/s', 'refused', 'p50 ms', 'p99 ms', 'gateway CPU ms/msg', 'worker CPU ms/msg', 'redis CPU ms/msg', 'bench CPU ms/msg', 'redis cmds/msg'], r.phases.map((p) => [
    p.name, f(p.load.messages / p.load.seconds, 0), p.load.refused, f(percentile(p.load.latencies, 50), 1), f(percentile(p.load.latencies, 99), 1),
    f(p.cpu.gateway), f(p.cpu.worker), f(p.cpu.redis), f(p.cpu.client), f(p.stats.reduce((sum, s) => sum + s.calls, 0) / p.load.messages, 1),
  ]));
  const [one, two] = r.phases;
  const total = (p: Phase) => p.cpu.gateway + p.cpu.worker + (p.cpu.redis ?? 0) + p.cpu.client;
  const cores = availableParallelism();
  console.log(`\n2 workers / 1 worker: ${f((two!.load.messages / two!.load.seconds) / (one!.load.messages / one!.load.seconds))}×. All processes together need ${f(total(two!))} CPU ms a message (bench client and fake LLM included): ${cores} cores give at most ${f((cores * 1000) / total(two!), 0)} msg/s however many workers run, and one worker process (one core) at most ${f(1000 / one!.cpu.worker, 0)} msg/s.`);
  const top = two!.stats.slice(0, 10);
  const usec = two!.stats.reduce((sum, s) => sum + s.usec, 0);
  console.log('\nRedis commands per delivered message (2 workers, closed loop), the most called:');
  printTable(['command', 'per msg', 'share of redis time'], top.map((s) => [s.command, f(s.calls / two!.load.messages, 1), `${f((100 * s.usec) / usec, 0)}%`]));
  console.log('\nIngest (in-process, same Redis) against raw BullMQ queue.add:');
  printTable(['concurrency', 'queue.add/s', 'ingest/s', 'ratio', 'redis cmds/ingest', 'one-script prototype/s', 'its ratio'], [1, 50].map((c) => {
    const of = (what: IngestFigure['what']) => r.ingest.find((x) => x.what === what && x.concurrency === c)!;
    const [add, ing, one] = [of('queue.add'), of('ingest'), of('one-script')];
    return [c, f(add.perSecond, 0), f(ing.perSecond, 0), f(ing.perSecond / add.perSecond), f(ing.commands, 1), f(one.perSecond, 0), f(one.perSecond / add.perSecond)];
  }));
  const sw = r.sweeper;
  console.log(`\nPending sweeper: one sweep cleared ${sw.cleared} of 30,000 sessions past the grace in ${f(sw.ms, 0)} ms (${f(sw.cleared / (sw.ms / 1000), 0)}/s; ${sw.enqueued} turns enqueued, ${sw.left} left): at its 30 s interval it keeps up with ${f(sw.cleared / 30, 0)} new sessions/s`);
  console.log(`\nRSS MiB: idle gateway ${f(r.idleRss.gateway, 0)}, idle worker ${f(r.idleRss.worker, 0)}; after the run ${r.rss.map((x) => `${x.role} ${f(x.mib, 0)}`).join(', ')}`);
  console.log(`(pipeline bench took ${f(r.seconds, 0)} s)`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
