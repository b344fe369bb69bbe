import type { InboundMessage } from '../core/inbound.js';
import type { RedisClient } from '../redis/client.js';
import { runScript } from '../redis/client.js';
import type { SessionKeys } from '../redis/keys.js';

// Marks the message seen and appends it to the inbox in one step: either both happen or neither,
// so a crash can neither lose an accepted message nor let a re-delivery in twice.
const ACCEPT = `
if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'EX', ARGV[3]) then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  return 1
end
return 0`;

// Counts one message in the user's window and gives the window its expiry in the same step.
const COUNT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n`;

/**
 * Durably accepts an inbound message: marks it seen and appends it to the session's inbox,
 * atomically. @returns false when it was seen before (a re-delivery).
 */
export async function acceptInbound(redis: RedisClient, keys: SessionKeys, seen: string, message: InboundMessage, ttlSeconds: number): Promise<boolean> {
  const result = await runScript(redis, ACCEPT, [seen, keys.inbox], [JSON.stringify(message), String(message.receivedAt), String(ttlSeconds)]);
  return Number(result) === 1;
}

/** Counts one message in a rate-limit window key that expires after `ttlSeconds`. @returns the count. */
export async function countInWindow(redis: RedisClient, key: string, ttlSeconds: number): Promise<number> {
  return Number(await runScript(redis, COUNT, [key], [String(ttlSeconds)]));
}
