import { ConfigError } from '../src/errors.js';
import { shardPrefix, type QueueNames } from '../src/queue/names.js';

/** One turn-queue shard a worker consumes, with the share of the worker's concurrency it gets. */
export interface ConsumedShard {
  shard: number;
  /** BullMQ prefix of the shard. */
  prefix: string;
  /** Turns of this shard run at once (at least 1). */
  concurrency: number;
}

/**
 * The shards a worker takes turns from — `only` (deduplicated, in order), or every shard — and how
 * its `concurrency` is split over them: evenly, the first ones getting the remainder, at least one
 * each (so a worker consuming more shards than its concurrency runs one turn per shard at most).
 * @throws ConfigError when a listed shard does not exist.
 */
export function consumedShards(names: QueueNames, only: readonly number[] | undefined, concurrency: number): ConsumedShard[] {
  const all = Array.from({ length: names.queueShards }, (_, i) => i);
  const chosen = only && only.length > 0 ? [...new Set(only)] : all;
  const bad = chosen.filter((s) => !Number.isInteger(s) || s < 0 || s >= names.queueShards);
  if (bad.length > 0) {
    throw new ConfigError([`CHATGATE_WORKER_SHARDS lists shard(s) ${bad.join(', ')}, but there are ${names.queueShards} shard(s) (0 to ${names.queueShards - 1}, CHATGATE_QUEUE_SHARDS)`]);
  }
  const base = Math.floor(concurrency / chosen.length);
  const extra = concurrency % chosen.length;
  return chosen.map((shard, i) => ({
    shard, prefix: shardPrefix(names.queuePrefix, shard, names.queueShards), concurrency: Math.max(1, base + (i < extra ? 1 : 0)),
  }));
}
