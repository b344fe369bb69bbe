import type { RedisClient } from '../redis/client.js';
import { runScript } from '../redis/client.js';

// Counts one message in the user's window and gives the window its expiry in the same step.
const COUNT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n`;

/** Counts one message in a rate-limit window key that expires after `ttlSeconds`. @returns the count. */
export async function countInWindow(redis: RedisClient, key: string, ttlSeconds: number): Promise<number> {
  return Number(await runScript(redis, COUNT, [key], [String(ttlSeconds)]));
}
