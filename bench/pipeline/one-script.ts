/**
 * A prototype, for bench/pipeline only (not shipped): what ingest would cost if its Redis work
 * were one script and the turn's `add` — the seen check, both rate-limit counters, the pending
 * mark, the accept (seen marker + inbox append) and the hygiene pre-check's reads (meta fields,
 * history length, inbox size) in one EVALSHA, then the deduplicated turn job. It measures the
 * ceiling of that restructuring; it does not handle commands, refusals or hygiene compaction.
 * The gateway's real one is src/redis/scripts/ingest-inbound-7.lua (via acceptInbound in
 * src/redis/ingest.ts, which on Redis Cluster writes the rate keys and the pending index, in other
 * slots, before it).
 */
import { Queue } from 'bullmq';
import { duplicateRedis, type RedisClient } from '../../src/redis/client.js';
import { turnDedupId } from '../../src/queue/names.js';

const LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then return {0} end
local limit = tonumber(ARGV[1])
for k = 4, 5 do
  local n = redis.call('INCR', KEYS[k])
  if n == 1 then redis.call('EXPIRE', KEYS[k], 120) end
  if n > limit then return {2} end
end
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
if not redis.call('SET', KEYS[1], ARGV[3], 'NX', 'EX', 86400) then return {0} end
redis.call('RPUSH', KEYS[2], ARGV[2])
local meta = redis.call('HMGET', KEYS[6], 'lastPromptTokens', 'appendedTokensSince', 'overheadTokens', 'projectionTokens', 'limits')
local bytes = 0
for _, item in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do bytes = bytes + #item end
return {1, redis.call('LLEN', KEYS[7]), bytes, meta[1] or false}
`;

/** The prototype as a bench subject: `send(n)` ingests message n of session `s<n % 500>`. */
export function buildOneScript(base: RedisClient, prefix: string) {
  const redis = duplicateRedis(base, { maxRetriesPerRequest: 2, commandTimeout: 750 });
  redis.defineCommand('benchIngest', { numberOfKeys: 7, lua: LUA });
  const queue = new Queue('turns', { connection: redis, prefix: `{${prefix}q}` });
  const run = (redis as unknown as { benchIngest(...args: Array<string | number>): Promise<number[]> }).benchIngest.bind(redis);
  return {
    async send(n: number) {
      const session = `web:s${n % 500}`;
      const k = (name: string) => `${prefix}:{${session}}:${name}`;
      const message = JSON.stringify({ id: `web:s${n % 500}:m${n}`, channel: 'web', chatId: `s${n % 500}`, userId: `s${n % 500}`, text: `message ${n}`, attachments: [], receivedAt: Date.now() });
      const window = Math.floor(Date.now() / 60_000);
      const [accepted] = await run(k(`seen:m${n}`), k('inbox'), `${prefix}:{${session}}:pending`, k(`rate:${window}`), k(`rate-addr:${window}`), k('meta'), k('history'), 10_000, message, Date.now(), session);
      if (accepted !== 1) throw new Error(`one-script prototype: message ${n} not accepted (${accepted})`);
      await queue.add('turn', { sessionId: session }, { deduplication: { id: turnDedupId(session), keepLastIfActive: true }, attempts: 5, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: 1000, removeOnFail: 5000 });
    },
    settle: async () => undefined,
    close: async () => { await queue.close(); redis.disconnect(); },
  };
}
