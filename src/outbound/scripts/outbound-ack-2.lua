--[[
  Settles a delivered reply: acknowledged in the consumer group and deleted from the stream, and
  out of its session's order (src/outbound/outbound-order.ts: the later replies of the chat may go),
  in one step (an acknowledged entry left in the stream would count as waiting for ever). The
  reply's marker stays until it expires, so re-adding the reply stays a no-op.

  Input:
    KEYS[1] the shard's stream
    KEYS[2] the session's pending replies (sorted set, see enter-outbound-order-1.lua)

    ARGV[1] options, JSON: { "group": string, "entryId": string, "replyId": string }

  Output:
    1 - settled
    0 - the entry was no longer pending (another consumer settled it): only the deletes ran
    error - invalid arguments: nothing written
]]
--- @include "options"
local group, entry, reply = opts['group'], opts['entryId'], opts['replyId']
if type(group) ~= 'string' or type(entry) ~= 'string' then return redis.error_reply('ERR outboundAck: group and entryId must be strings') end
if type(reply) ~= 'string' or reply == '' then return redis.error_reply('ERR outboundAck: replyId must be a non-empty string') end

local acked = redis.call('XACK', KEYS[1], group, entry)
redis.call('XDEL', KEYS[1], entry)
redis.call('ZREM', KEYS[2], reply)
return acked
