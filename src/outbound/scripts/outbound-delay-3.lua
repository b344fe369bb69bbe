--[[
  Moves a reply being delivered out of the stream into the delayed set, due at `dueMs` (rate
  limited, backing off after a transient failure, or held behind an older reply of its chat).
  Only the consumer that still holds the entry pending moves it: a second settle finds it acked.

  Input:
    KEYS[1] the shard's stream
    KEYS[2] the delayed set (sorted set: reply id -> due, ms)
    KEYS[3] the delayed entries (hash: reply id -> JSON { data, attempts, enq })

    ARGV[1] options, JSON: { "group": string, "entryId": string, "replyId": string, "dueMs": integer }
    ARGV[2] the delayed entry, JSON { "data": string, "attempts": string, "enq": string } (stored as it is)

  Output:
    1 - delayed
    0 - the entry was no longer pending: nothing written
    error - invalid arguments: nothing written
]]
--- @include "options"
local group, entry, reply, due = opts['group'], opts['entryId'], opts['replyId'], tonumber(opts['dueMs'])
if type(group) ~= 'string' or type(entry) ~= 'string' then return redis.error_reply('ERR outboundDelay: group and entryId must be strings') end
if type(reply) ~= 'string' or reply == '' then return redis.error_reply('ERR outboundDelay: replyId must be a non-empty string') end
if not due then return redis.error_reply('ERR outboundDelay: dueMs must be a number') end
if type(ARGV[2]) ~= 'string' or ARGV[2] == '' then return redis.error_reply('ERR outboundDelay: the entry must be given') end

if redis.call('XACK', KEYS[1], group, entry) == 0 then return 0 end
redis.call('XDEL', KEYS[1], entry)
redis.call('ZADD', KEYS[2], due, reply)
redis.call('HSET', KEYS[3], reply, ARGV[2])
return 1
