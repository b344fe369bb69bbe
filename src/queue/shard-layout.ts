import { Queue } from 'bullmq';
import { GatewayError } from '../errors.js';
import type { RedisClient } from '../redis/client.js';
import { DEFAULT_HEARTBEAT_TTL_MS } from '../redis/heartbeats.js';
import { queueLayoutKey, queueLayoutUsersKey } from '../redis/keys.js';
import { runScriptWithOptions } from '../redis/scripts.js';
import { shardPrefixes, type QueueNames } from './names.js';
import { openOutboundShard } from '../outbound/outbound-shard.js';

/** Job states that still have to run: a job in one of them would be split from its session's later jobs. */
const LIVE_STATES = ['wait', 'active', 'delayed', 'prioritized', 'waiting-children'] as const;
/** How often a claim may find the record changed under it before giving up (processes starting at once). */
const CLAIM_ATTEMPTS = 5;

/** What `queue-layout-2.lua` answered: a status and the recorded shard count (and, when busy, how many use it). */
type LayoutReply = ['ok' | 'check' | 'moved' | 'released', number] | ['busy', number, number];

/** Options of {@link claimQueueLayout}. */
export interface ClaimQueueLayoutOptions {
  /** The process's id among the layout's users; undefined: a one-off check that registers nobody. */
  member?: string;
  /** How long the process counts as a user of the layout unless it renews, ms. Default: the heartbeat's, `DEFAULT_HEARTBEAT_TTL_MS`. */
  ttlMs?: number;
}

/**
 * Jobs still to run (waiting, active, delayed, …) in a `shards`-shard layout: the turn queue's and
 * the reply streams' replies.
 */
export async function liveJobs(redis: RedisClient, names: QueueNames, shards: number): Promise<number> {
  let total = 0;
  for (const prefix of shardPrefixes({ queuePrefix: names.queuePrefix, queueShards: shards })) {
    const replies = await openOutboundShard(redis, prefix, names.outboundQueue).counts(Date.now());
    total += replies.waiting + replies.active + replies.delayed;
    const queue = new Queue(names.turnQueue, { connection: redis, prefix });
    queue.on('error', () => undefined);
    try {
      const counts = await queue.getJobCounts(...LIVE_STATES);
      total += Object.values(counts).reduce((a, b) => a + b, 0);
    } finally {
      await queue.close();
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
 * worker uses them, and (with `member`) registers the process as a user of that layout until it
 * stops renewing ({@link holdQueueLayout} renews). The first process records N; a process started
 * with another N takes over only when no other live process uses the recorded layout and no job
 * waits in it (a session's jobs must never be split over two shards), and otherwise refuses to
 * start. Check and record are one script: two processes starting at once with different N cannot
 * both pass. A deployment from before sharding (no record) is taken as one shard.
 * @throws GatewayError `QUEUE_LAYOUT_MISMATCH` naming both counts and how to drain.
 */
export async function claimQueueLayout(redis: RedisClient, names: QueueNames, options: ClaimQueueLayoutOptions = {}): Promise<void> {
  let from: number | undefined;
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const reply = await layoutScript(redis, names, 'claim', options, from);
    if (reply[0] === 'ok') return;
    if (reply[0] === 'busy') throw layoutMismatch(names.queuePrefix, reply[1], names.queueShards, `${reply[2]} other gateway or worker process(es) still use it (one that died without a clean stop counts for one heartbeat period)`);
    const waiting = await liveJobs(redis, names, reply[1]);
    if (waiting > 0) throw layoutMismatch(names.queuePrefix, reply[1], names.queueShards, `${waiting} job(s) still wait there`);
    from = reply[1];
  }
  throw new GatewayError('QUEUE_LAYOUT_MISMATCH', `the shard count recorded under ${names.queuePrefix} kept changing while this process started (processes with different CHATGATE_QUEUE_SHARDS starting at once?): start them all with one value`);
}

/** {@link claimQueueLayout} without registering the process: a start check for a process that does not hold the layout. */
export async function ensureQueueLayout(redis: RedisClient, names: QueueNames): Promise<void> {
  await claimQueueLayout(redis, names);
}

/**
 * Renews `member`'s use of the layout. @returns null while the recorded count is still the
 * process's own, or the count another process recorded since (the process is no user any more).
 * @throws on Redis errors.
 */
export async function renewQueueLayout(redis: RedisClient, names: QueueNames, member: string, ttlMs: number): Promise<number | null> {
  const reply = await layoutScript(redis, names, 'renew', { member, ttlMs });
  return reply[0] === 'ok' ? null : reply[1];
}

/** Removes `member` from the layout's users (a clean stop: another count may take over at once). */
export async function releaseQueueLayout(redis: RedisClient, names: QueueNames, member: string): Promise<void> {
  await layoutScript(redis, names, 'release', { member });
}

/** The error line of a process whose count is no longer the recorded one: both counts and what to do. */
export function layoutMovedMessage(prefix: string, own: number, recorded: number): string {
  return [
    `the queues under ${prefix} are now laid out in ${recorded} shard(s), but this process runs with CHATGATE_QUEUE_SHARDS=${own}:`,
    `it stops taking work (its jobs would go to shards other processes no longer read). Restart it with CHATGATE_QUEUE_SHARDS=${recorded},`,
    `or, if ${own} is meant, drain and switch every process as docs/sharding.md ("Changing N") says.`,
  ].join(' ');
}

async function layoutScript(redis: RedisClient, names: QueueNames, op: 'claim' | 'renew' | 'release', options: ClaimQueueLayoutOptions, from?: number): Promise<LayoutReply> {
  const keys = [queueLayoutKey(names.queuePrefix), queueLayoutUsersKey(names.queuePrefix)];
  const args = { shards: names.queueShards, member: options.member ?? '', ttlMs: options.ttlMs ?? DEFAULT_HEARTBEAT_TTL_MS, op, ...(from === undefined ? {} : { from }) };
  return (await runScriptWithOptions(redis, 'queueLayout', keys, args)) as LayoutReply;
}

function layoutMismatch(prefix: string, recorded: number, wanted: number, why: string): GatewayError {
  return new GatewayError('QUEUE_LAYOUT_MISMATCH', [
    `CHATGATE_QUEUE_SHARDS is ${wanted}, but the queues under ${prefix} are laid out in ${recorded} shard(s) and ${why};`,
    `starting would split sessions over two layouts. To change the shard count, run every gateway and worker with CHATGATE_QUEUE_SHARDS=${recorded}`,
    `until \`chatgate status\` shows the turns and outbound queues empty (nothing waiting, active or delayed), then stop them all and start them with CHATGATE_QUEUE_SHARDS=${wanted}.`,
  ].join(' '));
}
