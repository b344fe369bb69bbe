import type { RedisClient } from '../redis/client.js';
import { runScriptWithOptions } from '../redis/scripts.js';

/** Counts one message in a rate-limit window key that expires after `ttlSeconds`. @returns the count. */
export async function countInWindow(redis: RedisClient, key: string, ttlSeconds: number): Promise<number> {
  return Number(await runScriptWithOptions(redis, 'countInWindow', [key], { ttlSeconds }));
}
