/**
 * The Redis of bench/pipeline: a private `redis-server` on a free port (no persistence), or the
 * one `REDIS_URL` names; its command counts (`INFO commandstats`) and its process id (for CPU).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';

/** The bench's Redis. */
export interface BenchRedis {
  url: string;
  /** A plain connection for the bench's own commands (stats). */
  admin: Redis;
  /** The server's process id, when it runs on this machine (else undefined: no CPU figure). */
  pid?: number;
  /** True when the bench started the server itself. */
  private: boolean;
  close(): Promise<void>;
}

/** One command's counters from `INFO commandstats`. */
export interface CommandStat {
  command: string;
  calls: number;
  usec: number;
}

/** Starts a private redis-server, or connects to `url` when given. */
export async function startBenchRedis(url?: string): Promise<BenchRedis> {
  let child: ChildProcess | undefined;
  if (!url) {
    const port = await freePort();
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'], { stdio: 'ignore' });
    child.once('error', (err) => { throw new Error(`redis-server could not start (${err.message}); install it or set REDIS_URL`); });
    url = `redis://127.0.0.1:${port}`;
  }
  const admin = new Redis(url, { maxRetriesPerRequest: 20, retryStrategy: (n) => (n > 50 ? null : 100) });
  // A private server takes a moment to listen: the first refused connects are retried, not printed.
  admin.on('error', () => undefined);
  await admin.ping();
  const server = await admin.info('server');
  const pid = Number(/process_id:(\d+)/.exec(server)?.[1]);
  const local = Number.isInteger(pid) && (child?.pid === pid || (await isLocalRedis(pid)));
  return {
    url, admin, pid: local ? pid : undefined, private: child !== undefined,
    async close() {
      admin.disconnect();
      if (child && child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    },
  };
}

/** Zeroes the counters (`CONFIG RESETSTAT`). */
export async function resetStats(redis: Redis): Promise<void> {
  await redis.config('RESETSTAT');
}

/** Every command's counters since the last reset, most called first. */
export async function commandStats(redis: Redis): Promise<CommandStat[]> {
  const text = await redis.info('commandstats');
  const stats: CommandStat[] = [];
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    stats.push({ command: match[1]!, calls: Number(match[2]), usec: Number(match[3]) });
  }
  return stats.sort((a, b) => b.calls - a.calls);
}

async function isLocalRedis(pid: number): Promise<boolean> {
  const { readFile } = await import('node:fs/promises');
  return readFile(`/proc/${pid}/comm`, 'utf8').then((comm) => comm.startsWith('redis'), () => false);
}

/** A loopback port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
