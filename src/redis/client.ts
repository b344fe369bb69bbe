import { createHash } from 'node:crypto';
import { Redis, type Cluster } from 'ioredis';

/** A Redis connection: a single node or a cluster. */
export type RedisClient = Redis | Cluster;

const shaCache = new Map<string, string>();

/** Opens a single-node connection from a `redis://` URL (BullMQ needs `maxRetriesPerRequest: null`). */
export function createRedis(url: string = 'redis://127.0.0.1:6379'): Redis {
  return new Redis(url, { maxRetriesPerRequest: null });
}

/**
 * Runs a Lua script by SHA, loading it on `NOSCRIPT`. All `keys` must share one hash tag.
 * @returns The script's raw reply.
 */
export async function runScript(redis: RedisClient, script: string, keys: string[], args: (string | number)[]): Promise<unknown> {
  let sha = shaCache.get(script);
  if (!sha) {
    sha = createHash('sha1').update(script).digest('hex');
    shaCache.set(script, sha);
  }
  try {
    return await redis.evalsha(sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.includes('NOSCRIPT')) throw err;
    return redis.eval(script, keys.length, ...keys, ...args);
  }
}
