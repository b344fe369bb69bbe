import { Queue } from 'bullmq';
import { GatewayError } from '../errors.js';
import type { RedisClient } from '../redis/client.js';
import { queueLayoutKey } from '../redis/keys.js';
import { shardPrefixes, type QueueNames } from './names.js';

/** Job states that still have to run: a job in one of them would be split from its session's later jobs. */
const LIVE_STATES = ['wait', 'active', 'delayed', 'prioritized', 'waiting-children'] as const;

/** Jobs still to run (waiting, active, delayed, …) in the turn and outbound queues of a `shards`-shard layout. */
export async function liveJobs(redis: RedisClient, names: QueueNames, shards: number): Promise<number> {
  let total = 0;
  for (const prefix of shardPrefixes({ queuePrefix: names.queuePrefix, queueShards: shards })) {
    for (const name of [names.turnQueue, names.outboundQueue]) {
      const queue = new Queue(name, { connection: redis, prefix });
      queue.on('error', () => undefined);
      try {
        const counts = await queue.getJobCounts(...LIVE_STATES);
        total += Object.values(counts).reduce((a, b) => a + b, 0);
      } finally {
        await queue.close();
      }
    }
  }
  return total;
}

/** The shard count recorded in Redis by the first process, or null before any recorded one. */
export async function recordedShards(redis: RedisClient, queuePrefix: string): Promise<number | null> {
  const raw = await redis.get(queueLayoutKey(queuePrefix));
  return raw === null ? null : Number(raw);
}

/**
 * Makes sure the queues in Redis are laid out in `names.queueShards` shards before a gateway or
 * worker uses them. The first process records N (a small key); a process started with another N
 * takes over only when no job waits in the old layout (a session's jobs must never be split over
 * two shards), and otherwise refuses to start. A deployment from before sharding (no record) is
 * taken as one shard.
 * @throws GatewayError `QUEUE_LAYOUT_MISMATCH` naming both counts and how to drain.
 */
export async function ensureQueueLayout(redis: RedisClient, names: QueueNames): Promise<void> {
  const key = queueLayoutKey(names.queuePrefix);
  const wanted = names.queueShards;
  const recorded = Number((await redis.get(key)) ?? 1);
  if (recorded !== wanted) {
    const waiting = await liveJobs(redis, names, recorded);
    if (waiting > 0) throw layoutMismatch(names.queuePrefix, recorded, wanted, waiting);
  }
  await redis.set(key, String(wanted));
}

function layoutMismatch(prefix: string, recorded: number, wanted: number, waiting: number): GatewayError {
  return new GatewayError('QUEUE_LAYOUT_MISMATCH', [
    `CHATGATE_QUEUE_SHARDS is ${wanted}, but the queues under ${prefix} are laid out in ${recorded} shard(s) and ${waiting} job(s) still wait there;`,
    `starting would split sessions over two layouts. To change the shard count, run every gateway and worker with CHATGATE_QUEUE_SHARDS=${recorded}`,
    `until \`chatgate status\` shows the turns and outbound queues empty (nothing waiting, active or delayed), then stop them all and start them with CHATGATE_QUEUE_SHARDS=${wanted}.`,
  ].join(' '));
}
