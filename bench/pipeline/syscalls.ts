/**
 * bench/pipeline/syscalls: system calls and CPU per delivered message of each role, in the same
 * set-up as bench/pipeline (private redis-server, `chatgate gateway` + 2 `chatgate worker`, a 0-ms
 * fake LLM, the web chat API in a closed loop). Write and read calls come from /proc/<pid>/io
 * (`syscw`, `syscr`): unlike CPU time they do not grow with other load on the machine, so they
 * compare two builds on a busy machine. `npx tsx bench/pipeline/syscalls.ts [messages] [runs]`.
 */
import { readFileSync } from 'node:fs';
import { startBenchLlm } from './fake-llm.js';
import { createWebClient } from './load.js';
import { cpuMs, roleEnv, startRole, type RoleProcess } from './procs.js';
import { freePort, startBenchRedis } from './redis.js';

const messages = Number(process.argv[2] ?? 2000);
const runs = Number(process.argv[3] ?? 2);

/** Write and read system calls of a process so far. */
function syscalls(pid: number): { writes: number; reads: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return { writes: Number(/syscw:\s+(\d+)/.exec(io)?.[1]), reads: Number(/syscr:\s+(\d+)/.exec(io)?.[1]) };
}

const redis = await startBenchRedis();
const llm = await startBenchLlm();
const tag = `bench-sys-${process.pid}`;
const port = await freePort();
const env = roleEnv({ redisUrl: redis.url, llmUrl: llm.baseURL, tag, port });
const roles: RoleProcess[] = [];
try {
  roles.push(await startRole('gateway', env));
  for (let n = 0; n < 2; n++) roles.push(await startRole('worker', { ...env, CHATGATE_HTTP_PORT: '0' }));
  const client = createWebClient(`http://127.0.0.1:${port}`, tag);
  await client.closedLoop(16, 300);
  for (let run = 0; run < runs; run++) {
    const before = roles.map((r) => ({ ...syscalls(r.pid), cpu: cpuMs(r.pid) }));
    const load = await client.closedLoop(50, messages);
    const after = roles.map((r) => ({ ...syscalls(r.pid), cpu: cpuMs(r.pid) }));
    const per = (role: string, key: 'writes' | 'reads' | 'cpu') => roles.reduce((sum, r, i) => sum + (r.role === role ? after[i]![key] - before[i]![key] : 0), 0) / load.messages;
    const line = (role: string) => `${role} ${per(role, 'writes').toFixed(1)} writes, ${per(role, 'reads').toFixed(1)} reads, ${per(role, 'cpu').toFixed(2)} CPU ms`;
    console.log(`run ${run + 1} (${load.messages} messages, ${(load.messages / load.seconds).toFixed(0)} msg/s), per message: ${line('gateway')}; ${line('worker')} (2 summed)`);
  }
} finally {
  for (const role of roles.reverse()) await role.stop().catch(() => undefined);
  await llm.close();
  await redis.close();
}
