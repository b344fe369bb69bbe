/**
 * An opt-in diagnostic of bench/pipeline (`PIPELINE_MONITOR=1`): Redis `MONITOR` during one extra
 * phase, counting the commands clients sent (those scripts run are one line), each script call under
 * its name — chatgate's (src/redis/scripts) and BullMQ's, matched by their SHA-1. MONITOR slows
 * Redis down: the phase it watches gives no throughput figure.
 */
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Redis } from 'ioredis';
import { SCRIPTS } from '../../src/redis/scripts.js';

/** Counts of commands seen, script calls under their names (`evalsha:moveToActive`). */
export interface MonitorCounts {
  stop(): Promise<Map<string, number>>;
}

/** Starts counting; `detail` also names each command a script ran. */
export async function startMonitor(admin: Redis, detail = false): Promise<MonitorCounts> {
  const names = await scriptNames();
  const counts = new Map<string, number>();
  const monitor = await admin.duplicate().monitor();
  // A script's own commands follow its EVALSHA line (nothing else runs while a script runs).
  let script = '';
  const add = (name: string) => counts.set(name, (counts.get(name) ?? 0) + 1);
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') {
      add(`  inside ${script || 'a script'}${detail ? `: ${(args[0] ?? '').toLowerCase()}` : ''}`);
      return;
    }
    const command = (args[0] ?? '').toLowerCase();
    let name = command === 'evalsha' ? `evalsha:${names.get(args[1] ?? '') ?? args[1]?.slice(0, 8)}` : command;
    // In detail, BullMQ's calls name their queue (from the first key, `<prefix>:<queue>:<suffix>`).
    if (detail && (name.startsWith('evalsha:bullmq:') || command === 'bzpopmin')) name += ` (${queueOf(command === 'bzpopmin' ? args[1] : args[3])})`;
    script = command === 'evalsha' ? name : '';
    add(name);
  });
  return {
    async stop() {
      monitor.disconnect();
      return counts;
    },
  };
}

function queueOf(key: string | undefined): string {
  const parts = (key ?? '').split(':');
  return parts.length >= 3 ? parts[parts.length - 2]! : '?';
}

async function scriptNames(): Promise<Map<string, string>> {
  const sha = (lua: string) => createHash('sha1').update(lua).digest('hex');
  const names = new Map<string, string>();
  for (const script of Object.values(SCRIPTS)) names.set(sha(script.lua), script.name);
  const dir = join(dirname(createRequire(import.meta.url).resolve('bullmq')), 'scripts');
  for (const file of readdirSync(dir).filter((f) => /^[A-Za-z]+-\d+\.js$/.test(f))) {
    const module = (await import(join(dir, file))) as Record<string, { name?: string; content?: string }>;
    for (const value of Object.values(module)) if (value?.content && value.name) names.set(sha(value.content), `bullmq:${value.name}`);
  }
  return names;
}
