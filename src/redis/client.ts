import type { Socket } from 'node:net';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { EventEmitter } from 'node:events';
import { createOutageLog, type Logger, type OutageLog } from '../log.js';

/** A Redis connection: a single node or a cluster. */
export type RedisClient = Redis | Cluster;

/** Opens a single-node connection from a `redis://` URL (BullMQ needs `maxRetriesPerRequest: null`). */
export function createRedis(url: string = 'redis://127.0.0.1:6379'): Redis {
  return coalesceWrites(new Redis(url, { maxRetriesPerRequest: null }));
}

/**
 * Makes the commands a connection sends in one tick of the event loop leave in one socket write:
 * ioredis writes each command on its own (a system call each), so under load most of a process's
 * Redis cost is writes. The socket is corked at the tick's first write and uncorked once the
 * tick's callbacks and promise continuations ran (`process.nextTick`); order, replies and
 * reconnects are ioredis's as before. On a Cluster, every node connection. @returns `redis`.
 */
export function coalesceWrites<T extends RedisClient>(redis: T): T {
  if (redis instanceof Cluster) {
    redis.on('+node', (node: Redis) => coalesceWrites(node));
    return redis;
  }
  const attach = (): void => corkPerTick((redis as unknown as { stream?: Socket }).stream);
  redis.on('connect', attach);
  attach();
  return redis;
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
  return coalesceWrites(new Cluster(seeds.map((seed) => ({ host: seed.host, port: seed.port })), { redisOptions: { maxRetriesPerRequest: null } }));
}

/**
 * A new connection to the same Redis or Cluster with `overrides` applied to its (node) options:
 * `Redis.duplicate(overrides)` on one node, `Cluster.duplicate([], { redisOptions })` on a cluster
 * (whose first parameter is a list of seed nodes, not options).
 */
export function duplicateRedis(redis: RedisClient, overrides: Partial<RedisOptions> = {}): RedisClient {
  if (redis instanceof Cluster) return coalesceWrites(redis.duplicate([], { redisOptions: { ...redis.options.redisOptions, ...overrides } }));
  return coalesceWrites(redis.duplicate(overrides));
}

const corked = new WeakSet<Socket>();

/** Wraps `stream.write` (once per socket): the first write of a tick corks, the tick's end uncorks. */
function corkPerTick(stream: Socket | undefined): void {
  if (!stream || corked.has(stream)) return;
  corked.add(stream);
  const write = stream.write;
  let pending = false;
  const uncork = (): void => {
    pending = false;
    stream.uncork();
  };
  stream.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
    if (!pending) {
      pending = true;
      stream.cork();
      process.nextTick(uncork);
    }
    return write.apply(this, args);
  } as Socket['write'];
}

/** A Redis URL (or cluster seed list) fit for messages and logs: the password in `user:password@` is masked. */
export function redactRedisUrl(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

/**
 * Watches a connection (a Redis, a Cluster, or a BullMQ worker or queue) for its component: a lost
 * connection is the component's one `Redis unavailable` warning per 30 s while it lasts (the
 * repeats at debug), any other error is logged at error with `message`; once the connection is
 * ready again, one `Redis available again` line. @returns the component's {@link OutageLog}.
 */
export function watchConnection(emitter: Pick<EventEmitter, 'on'>, log: Logger, message: string): OutageLog {
  const outage = createOutageLog(log);
  emitter.on('error', (err: unknown) => outage.error({ err }, message));
  emitter.on('ready', () => outage.available());
  return outage;
}
