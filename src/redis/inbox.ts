import type { InboundMessage, OutboundMessage } from '../core/inbound.js';
import type { Logger } from '../log.js';
import type { RedisClient } from './client.js';
import { runScript } from './client.js';
import { pendingIndexKey, seenKey, sessionKeys, type SessionKeys } from './keys.js';

// Items already in processing (a crashed turn's) stay first; the inbox follows in arrival order.
// An item that is not an inbound message would fail every turn: it goes to the dead letters.
const CLAIM = `
while redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT') do end
local good, bad = {}, 0
for _, item in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
  local ok, value = pcall(cjson.decode, item)
  if ok and type(value) == 'table' and type(value['id']) == 'string' and type(value['channel']) == 'string'
    and type(value['chatId']) == 'string' and type(value['text']) == 'string' then
    table.insert(good, item)
  else
    redis.call('LREM', KEYS[2], 1, item)
    redis.call('RPUSH', KEYS[3], item)
    bad = bad + 1
  end
end
return {bad, good}`;

// Marks the message seen and appends it to the inbox in one step: either both happen or neither,
// so a crash can neither lose an accepted message nor let a re-delivery in twice.
const ACCEPT = `
if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'EX', ARGV[3]) then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  return 1
end
return 0`;

/** Default of how long a message id is remembered to drop platform re-deliveries, in seconds (a day). */
export const DEFAULT_DEDUPE_TTL_SECONDS = 86_400;

/** Options of {@link acceptInbound}. */
export interface AcceptOptions {
  /** Session key prefix. */
  keyPrefix: string;
  /** How long the message id is remembered, in seconds. Default {@link DEFAULT_DEDUPE_TTL_SECONDS}. */
  dedupeTtlSeconds?: number;
  /** When, ms since epoch (the pending index's score). */
  nowMs: number;
}

/**
 * Durably accepts an inbound message, the one way into an inbox: marks the session pending (the
 * sweeper enqueues its turn if the caller dies before doing so), then marks the message seen and
 * appends it to the inbox, atomically. The caller then enqueues the session's turn.
 * @returns false when the message was seen before (a re-delivery): nothing was appended.
 */
export async function acceptInbound(redis: RedisClient, sessionId: string, message: InboundMessage, options: AcceptOptions): Promise<boolean> {
  const keys = sessionKeys(sessionId, options.keyPrefix);
  const seen = seenKey(sessionId, message.id, options.keyPrefix);
  // Marked pending first (its own slot): if this process dies before the turn is enqueued, the sweeper does it.
  await redis.zadd(pendingIndexKey(options.keyPrefix), options.nowMs, sessionId);
  const ttlSeconds = options.dedupeTtlSeconds ?? DEFAULT_DEDUPE_TTL_SECONDS;
  return Number(await runScript(redis, ACCEPT, [seen, keys.inbox], [JSON.stringify(message), String(message.receivedAt), String(ttlSeconds)])) === 1;
}

/**
 * Moves every inbox item to the processing list and returns the whole processing list, oldest
 * first (a crashed turn's items come before new ones). Items leave processing only at commit.
 * An item that is not an inbound message (no string `id`, `channel`, `chatId`, `text`) is moved
 * to the dead-letter list (`keys.failed`) instead, and logged at warn.
 */
export async function claimInbox(redis: RedisClient, keys: SessionKeys, logger?: Logger): Promise<InboundMessage[]> {
  const [malformed, raw] = (await runScript(redis, CLAIM, [keys.inbox, keys.processing, keys.failed], [])) as [number, string[]];
  if (malformed > 0) logger?.warn({ malformed, key: keys.failed }, 'malformed inbox items moved to the dead-letter list');
  return raw.map((item) => JSON.parse(item) as InboundMessage);
}

/** Number of messages waiting in the inbox plus those taken by a running turn. */
export async function pendingCount(redis: RedisClient, keys: SessionKeys): Promise<{ inbox: number; processing: number }> {
  const [inbox, processing] = await Promise.all([redis.llen(keys.inbox), redis.llen(keys.processing)]);
  return { inbox, processing };
}

// Under the lease: processing → failed (newest kept), the notice into the outbox, turn bookkeeping reset.
const DEAD_LETTER = `
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return -1 end
local moved = 0
while redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT') do moved = moved + 1 end
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[3]), -1)
if moved > 0 and ARGV[2] ~= '' then redis.call('RPUSH', KEYS[5], ARGV[2]) end
redis.call('HSET', KEYS[4], 'turnInboundIds', '[]')
redis.call('HINCRBY', KEYS[4], 'version', 1)
return moved`;

/** Dead letters kept per session (the newest). */
export const DEAD_LETTER_RETENTION = 1000;

/** The processing list as it is (the items a running or crashed turn has taken), oldest first. */
export async function readProcessing(redis: RedisClient, keys: SessionKeys): Promise<InboundMessage[]> {
  const raw = await redis.lrange(keys.processing, 0, -1);
  return raw.map((item) => JSON.parse(item) as InboundMessage);
}

/**
 * Moves the processing list to the session's dead-letter list (`keys.failed`) and, when anything
 * moved, puts `notice` in the outbox — atomically, only while `fence` holds the lease.
 * @returns the number of messages moved, or null when the lease is not held by `fence`.
 */
export async function deadLetterProcessing(redis: RedisClient, keys: SessionKeys, fence: number, notice: OutboundMessage | null): Promise<number | null> {
  const moved = Number(await runScript(redis, DEAD_LETTER, [keys.processing, keys.failed, keys.lease, keys.meta, keys.outbox], [String(fence), notice ? JSON.stringify(notice) : '', DEAD_LETTER_RETENTION]));
  return moved < 0 ? null : moved;
}
