import { Queue, type ConnectionOptions, type JobsOptions, type JobType } from 'bullmq';
import { sessionShardPrefix, shardPrefixes, type QueueNames } from './names.js';

/**
 * The turn queue split into `queueShards` BullMQ queues, each under its own hash-tagged prefix. A
 * session's jobs always go to the same shard (src/core/shard.ts). Replies do not use it: the
 * outbound queue is a Redis stream per shard (src/outbound/outbound-queue.ts).
 */
export interface ShardedQueue<T> {
  /** The logical queue name (`turns`). */
  readonly name: string;
  /** Every shard's queue, shard 0 first (one queue when unsharded). */
  readonly shards: readonly Queue<T>[];
  /** The queue of the shard that holds session `sessionId`. */
  forSession(sessionId: string): Queue<T>;
  /** Adds a job to the shard of `data.sessionId`. */
  add(name: string, data: T, opts?: JobsOptions): Promise<unknown>;
  /** Job counts summed over every shard. */
  getJobCounts(...types: JobType[]): Promise<Record<string, number>>;
  /** Listens to every shard's `error` event. */
  onError(listener: (err: Error, queue: Queue<T>) => void): void;
  close(): Promise<void>;
}

/** Opens the shards of queue `name` on `connection`. */
export function openShardedQueue<T extends { sessionId: string }>(
  name: string, names: Pick<QueueNames, 'queuePrefix' | 'queueShards'>, connection: ConnectionOptions,
): ShardedQueue<T> {
  const byPrefix = new Map(shardPrefixes(names).map((prefix) => [prefix, new Queue<T>(name, { connection, prefix })]));
  const shards = [...byPrefix.values()];
  const forSession = (sessionId: string): Queue<T> => byPrefix.get(sessionShardPrefix(names, sessionId))!;
  return {
    name, shards, forSession,
    // BullMQ's generic `add` signature does not accept a plain `T`; the shard queue is typed by T anyway.
    add: (jobName, data, opts) => (forSession(data.sessionId) as Queue).add(jobName, data, opts),
    async getJobCounts(...types) {
      const total: Record<string, number> = {};
      for (const counts of await Promise.all(shards.map((q) => q.getJobCounts(...types)))) {
        for (const [type, n] of Object.entries(counts)) total[type] = (total[type] ?? 0) + n;
      }
      return total;
    },
    onError(listener) {
      for (const queue of shards) queue.on('error', (err) => listener(err, queue));
    },
    async close() {
      await Promise.all(shards.map((q) => q.close()));
    },
  };
}
