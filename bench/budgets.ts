/**
 * bench/budgets: what budgets cost, A against B at the same time on the same machine. Two whole
 * stacks run at once on one Redis, each under its own key prefix and HTTP port: A is `chatgate
 * gateway` and one `chatgate worker` without budgets, B the same with a limit at every level
 * (never reached). Short rounds then alternate A B, B A, A B … so drift in the machine's load
 * falls on both alike. Each round reads its stack's CPU from /proc and Redis's command counts (the
 * other stack idles). Sizes: BUDGETS_PAIRS (default 10), BUDGETS_MESSAGES (a round, default 300),
 * BUDGETS_SESSIONS (default 50); BUDGETS_RATE makes each round an open loop at that many messages
 * a second, so both stacks run at one load. BUDGETS_AA=1 runs B without budgets too: the noise
 * floor. REDIS_URL as in bench/pipeline.
 */
import { availableParallelism, loadavg } from 'node:os';
import { startBenchLlm, type BenchLlm } from './pipeline/fake-llm.js';
import { removeKeys } from './pipeline/ingest.js';
import { createWebClient } from './pipeline/load.js';
import { BUDGET_ENV, cpuExactMs, machine, roleEnv, startRole, type RoleProcess } from './pipeline/procs.js';
import { commandStats, freePort, resetStats, startBenchRedis, type BenchRedis } from './pipeline/redis.js';
import { median, percentile, printTable, ratioInterval } from './util.js';

const PAIRS = Number(process.env.BUDGETS_PAIRS ?? 10);
const MESSAGES = Number(process.env.BUDGETS_MESSAGES ?? 300);
const SESSIONS = Number(process.env.BUDGETS_SESSIONS ?? 50);
/** BUDGETS_RATE: each round an open loop at this many messages a second (default 0: closed loop). */
const RATE = Number(process.env.BUDGETS_RATE ?? 0);
/** Warm-up messages of each stack before the rounds (JIT, scripts, connections). */
const WARM_UP = 1000;
/** After a round's last reply, before its counters are read: the turns' trailing work (job completion) lands in the round. */
const SETTLE_MS = 300;
/** BUDGETS_AA=1: B without budgets too, so B/A shows what the bench cannot tell from 1. */
const AA = process.env.BUDGETS_AA === '1';

type Label = 'A' | 'B';

/** One stack: its label, tag, processes and web client. */
interface Stack {
  label: Label;
  tag: string;
  roles: RoleProcess[];
  client: ReturnType<typeof createWebClient>;
}

/** One measured round of one stack. */
interface Round {
  stack: Label;
  messages: number;
  seconds: number;
  refused: number;
  p50Ms: number;
  /** CPU ms a message by role; redis undefined when the server is not local. */
  cpu: { gateway: number; worker: number; redis?: number };
  /** Commands Redis ran (both stacks; the other one idle). */
  commands: number;
  /** The same by command name (scripts' inner commands under their own names). */
  byCommand: Map<string, number>;
  modelCalls: number;
}

/** What the report says beside the rounds. */
interface Context {
  /** Commands a second with both stacks idle. */
  idle: number;
  /** The 1-minute load average before and after the rounds. */
  load: [number, number];
  redis: BenchRedis;
  seconds: number;
}

export async function runBudgetsBench(): Promise<void> {
  const started = performance.now();
  const redis = await startBenchRedis(process.env.REDIS_URL);
  const llm = await startBenchLlm();
  const stacks: Stack[] = [];
  try {
    stacks.push(await startStack('A', redis, llm, {}), await startStack('B', redis, llm, AA ? {} : BUDGET_ENV));
    await sleep(4000); // settled: start-up garbage collected
    for (const stack of stacks) await stack.client.closedLoop(SESSIONS, WARM_UP);
    const idle = await idleCommandsPerSecond(redis);
    const loadBefore = loadavg()[0]!;
    const rounds: Round[] = [];
    for (let pair = 0; pair < PAIRS; pair++) {
      // A B, then B A: each stack runs first in half the pairs, and as often after itself as after the other.
      for (const stack of pair % 2 === 0 ? stacks : [...stacks].reverse()) rounds.push(await round(stack, redis, llm));
    }
    report(rounds, { idle, load: [loadBefore, loadavg()[0]!], redis, seconds: (performance.now() - started) / 1000 });
  } finally {
    for (const stack of stacks) for (const role of stack.roles.reverse()) await role.stop().catch(() => undefined);
    if (!redis.private) for (const stack of stacks) await removeKeys(redis, stack.tag);
    await llm.close();
    await redis.close();
  }
}

/** Starts a gateway and one worker under their own tag and port, with `extra` in their environment. */
async function startStack(label: Label, redis: BenchRedis, llm: BenchLlm, extra: Record<string, string>): Promise<Stack> {
  const tag = `bench-budgets-${process.pid}-${label}`;
  const port = await freePort();
  const env = roleEnv({ redisUrl: redis.url, llmUrl: llm.baseURL, tag, port }, extra);
  const roles = [await startRole('gateway', env)];
  roles.push(await startRole('worker', { ...env, CHATGATE_HTTP_PORT: '0' }));
  return { label, tag, roles, client: createWebClient(`http://127.0.0.1:${port}`, tag) };
}

/** One round of `stack`; the other stack idles, so Redis's counts are this one's (and the idle rate's). */
async function round(stack: Stack, redis: BenchRedis, llm: BenchLlm): Promise<Round> {
  await resetStats(redis.admin);
  const before = cpuOf(stack, redis);
  const callsBefore = llm.calls();
  const load = await (RATE > 0 ? stack.client.openLoop(RATE, MESSAGES / RATE) : stack.client.closedLoop(SESSIONS, MESSAGES));
  await sleep(SETTLE_MS);
  const after = cpuOf(stack, redis);
  const per = (ms: number) => ms / load.messages;
  return {
    stack: stack.label, messages: load.messages, seconds: load.seconds, refused: load.refused, p50Ms: percentile(load.latencies, 50),
    cpu: { gateway: per(after.gateway - before.gateway), worker: per(after.worker - before.worker), ...(after.redis === undefined ? {} : { redis: per(after.redis - before.redis!) }) },
    ...await commandCounts(redis), modelCalls: llm.calls() - callsBefore,
  };
}

/** CPU ms so far of the stack's gateway and worker, and of Redis when local. */
function cpuOf(stack: Stack, redis: BenchRedis): { gateway: number; worker: number; redis?: number } {
  const of = (role: string) => stack.roles.filter((r) => r.role === role).reduce((sum, r) => sum + cpuExactMs(r.pid), 0);
  return { gateway: of('gateway'), worker: of('worker'), ...(redis.pid === undefined ? {} : { redis: cpuExactMs(redis.pid) }) };
}

/** Commands since the last reset, in all and by name, the bench's own (CONFIG RESETSTAT, INFO) left out. */
async function commandCounts(redis: BenchRedis): Promise<{ commands: number; byCommand: Map<string, number> }> {
  const stats = (await commandStats(redis.admin)).filter((s) => !['config', 'info'].includes(s.command));
  return { commands: stats.reduce((sum, s) => sum + s.calls, 0), byCommand: new Map(stats.map((s) => [s.command, s.calls])) };
}

/** Commands a second Redis runs with both stacks idle (blocking reads, timers): in every round's count. */
async function idleCommandsPerSecond(redis: BenchRedis): Promise<number> {
  await resetStats(redis.admin);
  await sleep(2000);
  return (await commandCounts(redis)).commands / 2;
}

function report(rounds: Round[], context: Context): void {
  const { load, redis } = context;
  console.log(`\nbudgets: ${machine()}; A = gateway + 1 worker without budgets, B = the same ${AA ? 'again (BUDGETS_AA=1: the noise floor)' : 'with a limit at every level (never reached)'}; ${PAIRS} pairs of rounds of ${MESSAGES} messages, ${RATE > 0 ? `open loop ${RATE}/s` : `closed loop over ${SESSIONS} sessions`}, A B, B A, …; Redis ${redis.private ? 'private redis-server' : 'REDIS_URL (shared: counts include other clients)'}; load average ${f(load[0], 1)} before the rounds, ${f(load[1], 1)} after\n`);
  printTable(['round', 'stack', 'msg/s', 'refused', 'p50 ms', 'gateway CPU ms/msg', 'worker CPU ms/msg', 'redis CPU ms/msg', 'redis cmds/msg', 'cmds/model call'], rounds.map((r, i) => [
    i + 1, r.stack, f(r.messages / r.seconds, 0), r.refused, f(r.p50Ms, 1), f(r.cpu.gateway), f(r.cpu.worker), f(r.cpu.redis), f(r.commands / r.messages, 1), f(r.commands / r.modelCalls, 1),
  ]));
  // Pair i is rounds 2i and 2i + 1, one of each stack.
  const pairs = Array.from({ length: rounds.length / 2 }, (_, i) => {
    const [x, y] = [rounds[2 * i]!, rounds[2 * i + 1]!];
    return x.stack === 'A' ? { a: x, b: y } : { a: y, b: x };
  });
  console.log('\nA and B: median over rounds (p25–p75). B/A: the typical ratio within a pair (Hodges–Lehmann) and its confidence interval (Wilcoxon signed-rank).\n');
  printTable(['figure', 'A (no budgets)', AA ? 'B (no budgets)' : 'B (budgets)', 'B/A', 'B/A interval', 'pairs min–max'], [
    compare('gateway CPU ms/msg', pairs, (r) => r.cpu.gateway),
    compare('worker CPU ms/msg', pairs, (r) => r.cpu.worker),
    compare('gateway + worker CPU ms/msg', pairs, (r) => r.cpu.gateway + r.cpu.worker),
    compare('redis CPU ms/msg', pairs, (r) => r.cpu.redis),
    compare('redis cmds/msg', pairs, (r) => r.commands / r.messages),
    compare('redis cmds/model call', pairs, (r) => r.commands / r.modelCalls),
    compare('msg/s', pairs, (r) => r.messages / r.seconds),
    compare('p50 ms, post → reply', pairs, (r) => r.p50Ms),
  ]);
  const extra = pairs.map((p) => p.b.commands / p.b.modelCalls - p.a.commands / p.a.modelCalls);
  console.log(`\nB − A Redis commands a model call: median ${f(median(extra), 1)} (pairs ${f(Math.min(...extra), 1)}–${f(Math.max(...extra), 1)}; target ≤ 6). With both stacks idle Redis ran ${f(context.idle, 1)} commands/s, in every round's count.`);
  console.log(`By command (median of the pairs' B − A a model call; BullMQ's scripts are EVALSHAs too, and its polling varies with timing): ${extraByCommand(pairs)}.`);
  const busiest = Math.max(...load);
  if (busiest > 2 * availableParallelism()) console.log(`Load average ${f(busiest, 1)} on ${availableParallelism()} cores: the CPU intervals are wide; a run at a lower load resolves more.`);
  console.log(`(budgets bench took ${f(context.seconds, 0)} s)`);
}

/** The commands whose count a model call differs between B and A by 0.05 or more, the largest first. */
function extraByCommand(pairs: Array<{ a: Round; b: Round }>): string {
  const names = new Set(pairs.flatMap((p) => [...p.a.byCommand.keys(), ...p.b.byCommand.keys()]));
  const per = (r: Round, name: string) => (r.byCommand.get(name) ?? 0) / r.modelCalls;
  const rows = [...names].map((name) => ({ name, extra: median(pairs.map((p) => per(p.b, name) - per(p.a, name))) }))
    .filter((row) => Math.abs(row.extra) >= 0.05).sort((x, y) => Math.abs(y.extra) - Math.abs(x.extra));
  return rows.length === 0 ? 'none' : rows.map((row) => `${row.name} ${row.extra > 0 ? '+' : ''}${f(row.extra, 2)}`).join(', ');
}

/** One row of the summary: `value` of A and of B over the rounds, and B/A within the pairs. */
function compare(name: string, pairs: Array<{ a: Round; b: Round }>, value: (r: Round) => number | undefined): string[] {
  const [a, b] = [pairs.map((p) => value(p.a)), pairs.map((p) => value(p.b))];
  if ([...a, ...b].some((v) => v === undefined)) return [name, 'n/a', 'n/a', 'n/a', 'n/a', 'n/a'];
  const spread = (values: number[]) => `${f(median(values))} (${f(percentile(values, 25))}–${f(percentile(values, 75))})`;
  const ratios = pairs.map((_, i) => b[i]! / a[i]!);
  const { estimate, low, high, coverage } = ratioInterval(ratios);
  return [name, spread(a as number[]), spread(b as number[]), f(estimate, 3), `${f(low, 3)}–${f(high, 3)} (${f(100 * coverage, 0)}%)`, `${f(Math.min(...ratios), 3)}–${f(Math.max(...ratios), 3)}`];
}

function f(n: number | undefined, digits = 2): string {
  return n === undefined || !Number.isFinite(n) ? 'n/a' : n.toFixed(digits);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
