/**
 * A throw-away Redis Cluster for tests: three masters (no replicas) started from `redis-server` on
 * free loopback ports, with their config and data in a temporary folder. Never touches 6379.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pollUntil } from './waits.js';

const run = promisify(execFile);

/** A running test cluster. */
export interface TestCluster {
  /** Ports of the masters (their cluster bus is on port + 10000). */
  ports: number[];
  /** `127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`, as REDIS_CLUSTER_NODES takes it. */
  seeds: string;
  /** Runs `redis-cli -p <port> <args>` and returns its output. */
  cli(port: number, ...args: string[]): Promise<string>;
  /** Kills the servers (waits for them to exit) and deletes their folder. */
  stop(): Promise<void>;
}

/** Starts a 3-master cluster and waits until every node reports `cluster_state:ok`. */
export async function startTestCluster(masters = 3): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'cgcluster-'));
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  const cli = async (port: number, ...args: string[]) => (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args])).stdout;
  const stop = async () => {
    await Promise.all(children.map(killChild));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    while (ports.length < masters) {
      const port = await freeClusterPort(ports);
      const child = await startNode(dir, port);
      if (!child) continue;
      children.push(child);
      ports.push(port);
    }
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    for (const port of ports) await pollUntil(async () => (await cli(port, 'cluster', 'info')).includes('cluster_state:ok'), { intervalMs: 50, timeoutMs: 20_000, what: 'test cluster at cluster_state:ok' });
  } catch (err) {
    await stop();
    throw err;
  }
  return { ports, seeds: ports.map((p) => `127.0.0.1:${p}`).join(','), cli, stop };
}

/** Starts one node; resolves once it accepts connections, or null when it could not bind. */
function startNode(dir: string, port: number): Promise<ChildProcess | null> {
  const child = spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`),
    '--dir', dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--protected-mode', 'no',
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve) => {
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) resolve(child);
    });
    child.once('exit', () => resolve(null));
    child.once('error', () => resolve(null));
  });
}

/** A port that is free with its cluster bus port (+10000), not among `taken`. */
async function freeClusterPort(taken: number[]): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 25_000);
    if (taken.includes(port)) continue;
    if ((await isFree(port)) && (await isFree(port + 10_000))) return port;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}
