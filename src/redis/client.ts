import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** A Redis connection: a single node or a cluster. */
export type RedisClient = Redis | Cluster;

/** Opens a single-node connection from a `redis://` URL (BullMQ needs `maxRetriesPerRequest: null`). */
export function createRedis(url: string = 'redis://127.0.0.1:6379'): Redis {
  return new Redis(url, { maxRetriesPerRequest: null });
}

/** One seed node of a Redis Cluster. */
export interface ClusterSeed {
  host: string;
  port: number;
}

/**
 * Opens a Redis Cluster connection from a few seed nodes (the others are discovered). Node
 * connections get `maxRetriesPerRequest: null`, as BullMQ needs; every key chatgate writes is
 * hash-tagged per session, and the queue prefix must be hash-tagged too (the default `{cgq}` is).
 */
export function createRedisCluster(seeds: readonly ClusterSeed[]): Cluster {
  if (seeds.length === 0) throw new Error('a Redis Cluster needs at least one seed node');
  return new Cluster(seeds.map((seed) => ({ host: seed.host, port: seed.port })), { redisOptions: { maxRetriesPerRequest: null } });
}

/**
 * A new connection to the same Redis or Cluster with `overrides` applied to its (node) options:
 * `Redis.duplicate(overrides)` on one node, `Cluster.duplicate([], { redisOptions })` on a cluster
 * (whose first parameter is a list of seed nodes, not options).
 */
export function duplicateRedis(redis: RedisClient, overrides: Partial<RedisOptions> = {}): RedisClient {
  if (redis instanceof Cluster) return redis.duplicate([], { redisOptions: { ...redis.options.redisOptions, ...overrides } });
  return redis.duplicate(overrides);
}

/** A Redis URL (or cluster seed list) fit for messages and logs: the password in `user:password@` is masked. */
export function redactRedisUrl(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
