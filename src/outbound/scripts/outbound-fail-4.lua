--[[
  Fails a reply for good: out of the stream, into the failed set with its record (the reason an
  operator reads), kept `keepMs`; records older than that are pruned here. The reply's marker
  lives as long as the record, so re-adding the failed reply is a no-op meanwhile.

  Input:
    KEYS[1] the shard's stream
    KEYS[2] the failed set (sorted set: reply id -> when it failed, ms)
    KEYS[3] the failed records (hash: reply id -> JSON record)
    KEYS[4] the reply's marker

    ARGV[1] options, JSON: { "group": string, "entryId": string, "replyId": string, "nowMs": integer, "keepMs": integer > 0 }
    ARGV[2] the record, JSON (stored as it is)

  Output:
    1 - failed for good
    0 - the entry was no longer pending (another consumer settled it): nothing written
    error - invalid arguments: nothing written
]]
--- @include "options"
local group, entry, reply = opts['group'], opts['entryId'], opts['replyId']
local now, keep = tonumber(opts['nowMs']), tonumber(opts['keepMs'])
if type(group) ~= 'string' or type(entry) ~= 'string' then return redis.error_reply('ERR outboundFail: group and entryId must be strings') end
if type(reply) ~= 'string' or reply == '' then return redis.error_reply('ERR outboundFail: replyId must be a non-empty string') end
if not now or not keep or keep < 1 or keep % 1 ~= 0 then return redis.error_reply('ERR outboundFail: nowMs and keepMs (an integer >= 1) must be numbers') end
if type(ARGV[2]) ~= 'string' or ARGV[2] == '' then return redis.error_reply('ERR outboundFail: the record must be given') end

if redis.call('XACK', KEYS[1], group, entry) == 0 then return 0 end
redis.call('XDEL', KEYS[1], entry)
redis.call('ZADD', KEYS[2], now, reply)
redis.call('HSET', KEYS[3], reply, ARGV[2])
redis.call('SET', KEYS[4], 'failed', 'PX', keep)
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - keep, 'LIMIT', 0, 100)
if #old > 0 then
  redis.call('ZREM', KEYS[2], unpack(old))
  redis.call('HDEL', KEYS[3], unpack(old))
end
return 1
