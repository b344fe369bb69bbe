/**
 * On a Redis Cluster (REDIS_CLUSTER_NODES): `chatgate gateway` and one worker under a short closed
 * loop, once with the queues unsharded and once with CHATGATE_QUEUE_SHARDS=12, and the share of
 * the commands each master executed (INFO commandstats per master, reset before each run).
 */
import { Cluster } from 'ioredis';
import { createWebClient } from './load.js';
import { startRole, type RoleProcess } from './procs.js';
import { commandStats, freePort, resetStats } from './redis.js';

/** The share of commands each master ran with `shards` queue shards. */
export interface ClusterShare {
  shards: number;
  messages: number;
  /** `host:port` → share of all commands (0 … 1), busiest first. */
  shares: Array<{ node: string; share: number }>;
}

/** Runs the load with 1 and with 12 shards against the cluster at `seeds` (`host:port,…`). */
export async function runClusterShare(seeds: string, llmBaseURL: string, messages = 600): Promise<ClusterShare[]> {
  const nodes = seeds.split(',').map((s) => { const [host, port] = s.trim().split(':'); return { host: host!, port: Number(port) }; });
  const cluster = new Cluster(nodes);
  try {
    const out: ClusterShare[] = [];
    for (const shards of [1, 12]) out.push(await runOnce(cluster, seeds, llmBaseURL, shards, messages));
    return out;
  } finally {
    cluster.disconnect();
  }
}

async function runOnce(cluster: Cluster, seeds: string, llmBaseURL: string, shards: number, messages: number): Promise<ClusterShare> {
  const tag = `bench-cluster-${process.pid}-${shards}`;
  const port = await freePort();
  const env = {
    REDIS_CLUSTER_NODES: seeds, CHATGATE_KEY_PREFIX: `${tag}:`, CHATGATE_QUEUE_PREFIX: `{${tag}q}`, CHATGATE_QUEUE_SHARDS: String(shards),
    OPENAI_BASE_URL: llmBaseURL, OPENAI_API_KEY: 'bench', CHATGATE_MODEL: 'gpt-4o-mini', CHATGATE_LOG_LEVEL: 'warn',
    CHATGATE_RATE_LIMIT_PER_MINUTE: '10000', CHATGATE_HTTP_PORT: String(port),
  };
  const roles: RoleProcess[] = [];
  try {
    roles.push(await startRole('gateway', env), await startRole('worker', { ...env, CHATGATE_HTTP_PORT: '0' }));
    const client = createWebClient(`http://127.0.0.1:${port}`, tag);
    await client.closedLoop(16, 100);
    const masters = cluster.nodes('master');
    await Promise.all(masters.map((m) => resetStats(m)));
    const load = await client.closedLoop(50, messages);
    const calls = await Promise.all(masters.map(async (m) => (await commandStats(m)).filter((s) => !['config', 'info'].includes(s.command)).reduce((sum, s) => sum + s.calls, 0)));
    const total = calls.reduce((a, b) => a + b, 0);
    const shares = masters.map((m, i) => ({ node: `${m.options.host}:${m.options.port}`, share: calls[i]! / total })).sort((a, b) => b.share - a.share);
    return { shards, messages: load.messages, shares };
  } finally {
    for (const role of roles.reverse()) await role.stop().catch(() => undefined);
    await removeClusterKeys(cluster, tag);
  }
}

async function removeClusterKeys(cluster: Cluster, tag: string): Promise<void> {
  for (const master of cluster.nodes('master')) {
    for (const pattern of [`${tag}:*`, `{${tag}q*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await master.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        for (const key of keys) await cluster.unlink(key);
      } while (cursor !== '0');
    }
  }
}

/** Prints the shares, one line per shard count. */
export function printClusterShare(results: readonly ClusterShare[]): void {
  console.log('\nRedis Cluster (REDIS_CLUSTER_NODES): share of the commands each master executed (gateway + 1 worker, closed loop):');
  for (const r of results) {
    console.log(`  CHATGATE_QUEUE_SHARDS=${r.shards} (${r.messages} messages): ${r.shares.map((s) => `${s.node} ${(100 * s.share).toFixed(0)}%`).join(', ')}; busiest ${(100 * r.shares[0]!.share).toFixed(0)}%`);
  }
}
