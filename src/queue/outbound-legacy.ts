/**
 * The upgrade from the BullMQ outbound queue: replies an older gateway left as BullMQ jobs
 * (waiting, delayed, or active with an expired lock: their gateway is gone) are moved into the
 * outbound streams when a gateway starts, then removed. Idempotent: a start interrupted half-way
 * moves the rest next time, and a reply moved twice is added once (its marker).
 */
import { Queue, type Job } from 'bullmq';
import type { OutboundMessage } from '../core/inbound.js';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';
import { shardPrefixes, type QueueNames } from './names.js';
import { openOutboundShard } from './outbound-shard.js';

const MOVED_STATES = ['waiting', 'delayed', 'prioritized', 'active'] as const;
const PAGE = 500;

/**
 * Moves every legacy outbound job of `names` into its shard's stream. @returns how many were
 * moved. Jobs still locked by a running older gateway stay (a warning says so; the next start moves them).
 * @throws on Redis errors (the gateway does not start: nothing is lost, the jobs stay).
 */
export async function moveLegacyOutboundJobs(deps: { redis: RedisClient; logger: Logger }, names: QueueNames): Promise<number> {
  let moved = 0;
  let locked = 0;
  for (const prefix of shardPrefixes(names)) {
    const queue = new Queue<OutboundMessage>(names.outboundQueue, { connection: deps.redis, prefix });
    queue.on('error', () => undefined); // failures surface where its commands fail
    try {
      const counts = await queue.getJobCounts(...MOVED_STATES);
      if (Object.values(counts).every((n) => n === 0)) continue;
      const shard = openOutboundShard(deps.redis, prefix, names.outboundQueue);
      for (const state of MOVED_STATES) {
        // Moved jobs leave the state's list: the next page starts after the jobs that stayed.
        for (let kept = 0, more = true; more;) {
          const jobs = await queue.getJobs([state], kept, kept + PAGE - 1, true);
          more = jobs.length === PAGE;
          for (const job of jobs) {
            if (state === 'active' && await isLocked(deps.redis, prefix, names.outboundQueue, job)) {
              locked++;
              kept++;
            } else if (typeof job.data?.id === 'string' && typeof job.data.sessionId === 'string') {
              await shard.add(job.data);
              await job.remove();
              moved++;
            } else {
              kept++; // not a reply: left for an operator (bull-board of an older version, or DEL)
            }
          }
        }
      }
    } finally {
      await queue.close();
    }
  }
  if (moved > 0) deps.logger.info({ moved, queue: names.outboundQueue }, 'replies of the BullMQ outbound queue moved into the outbound streams');
  if (locked > 0) {
    deps.logger.warn({ locked, queue: names.outboundQueue }, 'an older gateway still delivers replies from the BullMQ outbound queue: stop it, then restart this gateway to move what it leaves');
  }
  return moved;
}

async function isLocked(redis: RedisClient, prefix: string, queue: string, job: Job): Promise<boolean> {
  return (await redis.exists(`${prefix}:${queue}:${job.id}:lock`)) === 1;
}
