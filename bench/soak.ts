/**
 * bench/soak: memory under sustained load. The pipeline's processes (`chatgate gateway` and two
 * `chatgate worker`, compiled, a 0-ms fake LLM, the web chat client) find their closed-loop peak,
 * then run an open loop at half of it for SOAK_MINUTES (default 30). After every minute each
 * role's V8 heap is read right after a full GC (through its inspector), beside its RSS and Redis's
 * used memory. The figures should level off: the verdict compares the last ten minutes (or the
 * last half of a shorter run), highest against lowest, with a 10% bound.
 */
import { startBenchLlm } from './pipeline/fake-llm.js';
import { openHeapProbe, type HeapProbe } from './pipeline/heap.js';
import { createWebClient, refusals, resets } from './pipeline/load.js';
import { machine, roleEnv, rssMiB, startRole, type RoleProcess } from './pipeline/procs.js';
import { freePort, startBenchRedis } from './pipeline/redis.js';
import { removeKeys } from './pipeline/ingest.js';
import { percentile, printTable } from './util.js';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
const SAMPLE_S = Number(process.env.SOAK_SAMPLE_S ?? 60);
/** SOAK_RATE: messages a second (default: half the closed-loop peak with 2 workers). */
const RATE = Number(process.env.SOAK_RATE ?? 0);
const SESSIONS = 50;
/** The spread allowed over the settled window, highest against lowest. */
const LEVEL_BOUND = 0.1;

/** One role's reading after a minute. */
interface Reading {
  role: string;
  heapMiB: number;
  rssMiB: number;
}

interface Sample {
  minute: number;
  messages: number;
  p50: number;
  p99: number;
  refused: number;
  readings: Reading[];
  redisMiB: number;
}

export async function runSoakBench(): Promise<void> {
  const redis = await startBenchRedis(process.env.REDIS_URL);
  const llm = await startBenchLlm();
  const tag = `bench-soak-${process.pid}`;
  const port = await freePort();
  const env = roleEnv({ redisUrl: redis.url, llmUrl: llm.baseURL, tag, port, logLevel: 'warn' });
  const roles: RoleProcess[] = [];
  const probes: HeapProbe[] = [];
  const inspect = ['--inspect=127.0.0.1:0'];
  try {
    roles.push(await startRole('gateway', env, inspect));
    for (let n = 0; n < 2; n++) roles.push(await startRole('worker', { ...env, CHATGATE_HTTP_PORT: '0' }, inspect));
    for (const role of roles) {
      if (!role.inspectorUrl) throw new Error(`chatgate ${role.role} printed no inspector address: cannot read its heap`);
      probes.push(await openHeapProbe(role.inspectorUrl));
    }
    const names = roles.map((role, k) => (role.role === 'gateway' ? 'gateway' : `worker ${k}`));
    const client = createWebClient(`http://127.0.0.1:${port}`, tag);
    await client.closedLoop(16, 300);
    const peak = await client.closedLoop(SESSIONS, 2000);
    const peakRate = peak.messages / peak.seconds;
    const rate = RATE > 0 ? RATE : Math.max(10, Math.floor(peakRate / 2));
    console.log(`\nsoak: ${machine()}; peak ${peakRate.toFixed(0)} msg/s (closed loop, ${SESSIONS} sessions); soaking at ${rate} msg/s for ${MINUTES} min, a reading every ${SAMPLE_S} s`);
    const read = async (): Promise<Reading[]> => Promise.all(roles.map(async (role, k) => ({ role: names[k]!, heapMiB: (await probes[k]!.read()).heapUsedMiB, rssMiB: rssMiB(role.pid) })));
    const start = await read();
    printRow(0, null, start, await usedMiB(redis.admin));
    const samples: Sample[] = [];
    const rounds = Math.max(1, Math.round((MINUTES * 60) / SAMPLE_S));
    for (let k = 1; k <= rounds; k++) {
      const load = await client.openLoop(rate, SAMPLE_S);
      const sample: Sample = {
        minute: (k * SAMPLE_S) / 60, messages: load.messages, refused: load.refused,
        p50: percentile(load.latencies, 50), p99: percentile(load.latencies, 99), readings: await read(), redisMiB: await usedMiB(redis.admin),
      };
      samples.push(sample);
      printRow(sample.minute, sample, sample.readings, sample.redisMiB);
    }
    verdict(names, samples);
    for (const probe of probes.splice(0)) probe.close();
    for (const role of roles.splice(0).reverse()) await role.stop();
    await removeKeys(redis, tag);
  } finally {
    for (const probe of probes) probe.close();
    for (const role of roles.reverse()) await role.stop().catch(() => undefined);
    await llm.close();
    await redis.close();
  }
}

/** One line as the soak goes, so a 30-minute run shows progress. */
function printRow(minute: number, sample: Sample | null, readings: Reading[], redisMiB: number): void {
  const load = sample ? `${sample.messages} msgs, p50 ${sample.p50.toFixed(0)} ms, p99 ${sample.p99.toFixed(0)} ms${sample.refused ? `, ${sample.refused} refused` : ''}` : 'before the soak';
  const roles = readings.map((r) => `${r.role} heap ${r.heapMiB.toFixed(1)} rss ${r.rssMiB.toFixed(0)}`).join('; ');
  console.log(`  min ${minute.toFixed(1).padStart(5)}: ${load}; MiB ${roles}; redis ${redisMiB.toFixed(0)}`);
}

/** The settled window (last ten minutes, or the last half of a shorter run): spread of each figure. */
function verdict(names: string[], samples: Sample[]): void {
  const window = samples.slice(-Math.max(2, Math.min(Math.round(600 / SAMPLE_S), Math.ceil(samples.length / 2))));
  const spread = (values: number[]) => (Math.max(...values) - Math.min(...values)) / Math.min(...values);
  const rows = names.flatMap((name, k) => (['heapMiB', 'rssMiB'] as const).map((field) => {
    const values = window.map((s) => s.readings[k]![field]);
    const first = samples[0]!.readings[k]![field];
    const s = spread(values);
    return [name, field === 'heapMiB' ? 'heap after GC' : 'RSS', first.toFixed(1), Math.min(...values).toFixed(1), Math.max(...values).toFixed(1), `${(100 * s).toFixed(1)}%`, s <= LEVEL_BOUND ? 'levels off' : 'GROWS'];
  }));
  console.log(`\nsoak verdict over the last ${window.length} readings (${window[0]!.minute.toFixed(0)}–${window.at(-1)!.minute.toFixed(0)} min), bound ${100 * LEVEL_BOUND}%:`);
  printTable(['process', 'figure MiB', 'first reading', 'window min', 'window max', 'spread', 'verdict'], rows);
  const messages = samples.reduce((sum, s) => sum + s.messages, 0);
  console.log(`connections reset by the gateway and sent again: ${resets.reused} kept-alive, ${resets.fresh} fresh`);
  for (const [answer, count] of refusals) console.log(`posts refused ${count}×: ${answer}`);
  console.log(`${messages} messages in all; Redis used ${samples[0]!.redisMiB.toFixed(0)} → ${samples.at(-1)!.redisMiB.toFixed(0)} MiB (sessions keep their transcripts)`);
}

async function usedMiB(admin: { info(section: string): Promise<string> }): Promise<number> {
  const info = await admin.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN) / 1024 / 1024;
}
