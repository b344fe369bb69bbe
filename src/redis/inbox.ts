import type { InboundMessage } from '../core/inbound.js';
import type { RedisClient } from './client.js';
import { runScript } from './client.js';
import type { SessionKeys } from './keys.js';

// Items already in processing (a crashed turn's) stay first; the inbox follows in arrival order.
const CLAIM = `
while redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT') do end
return redis.call('LRANGE', KEYS[2], 0, -1)`;

/** Appends an inbound message to the session's inbox. @returns the inbox length. */
export async function pushInbox(redis: RedisClient, keys: SessionKeys, message: InboundMessage): Promise<number> {
  return redis.rpush(keys.inbox, JSON.stringify(message));
}

/**
 * Moves every inbox item to the processing list and returns the whole processing list, oldest
 * first (a crashed turn's items come before new ones). Items leave processing only at commit.
 */
export async function claimInbox(redis: RedisClient, keys: SessionKeys): Promise<InboundMessage[]> {
  const raw = (await runScript(redis, CLAIM, [keys.inbox, keys.processing], [])) as string[];
  return raw.map((item) => JSON.parse(item) as InboundMessage);
}

/** Number of messages waiting in the inbox plus those taken by a running turn. */
export async function pendingCount(redis: RedisClient, keys: SessionKeys): Promise<{ inbox: number; processing: number }> {
  const [inbox, processing] = await Promise.all([redis.llen(keys.inbox), redis.llen(keys.processing)]);
  return { inbox, processing };
}
