--[[
  Moves the delayed replies that are due back into the stream, oldest due first, at most `limit`.
  Each one leaves the delayed set in the same step it enters the stream, so gateways promoting
  at once neither duplicate nor lose one. An entry whose record does not decode is put in the
  stream without its reply, for the consumer to fail for good with a reason.

  Input:
    KEYS[1] the shard's stream
    KEYS[2] the delayed set (sorted set: reply id -> due, ms)
    KEYS[3] the delayed entries (hash: reply id -> JSON { data, attempts, enq })

    ARGV[1] options, JSON: { "nowMs": integer, "limit": integer >= 1 }

  Output:
    { moved, nextDueMs } - how many entered the stream, and when the next delayed one is due (-1: none)
    error - invalid arguments: nothing written
]]
--- @include "options"
local now, limit = tonumber(opts['nowMs']), tonumber(opts['limit'])
if not now then return redis.error_reply('ERR outboundPromote: nowMs must be a number') end
if not limit or limit < 1 or limit % 1 ~= 0 then return redis.error_reply('ERR outboundPromote: limit must be an integer >= 1') end

local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
for _, reply in ipairs(due) do
  local raw = redis.call('HGET', KEYS[3], reply)
  local decoded, entry = pcall(cjson.decode, raw or '')
  if decoded and type(entry) == 'table' and type(entry['data']) == 'string' then
    redis.call('XADD', KEYS[1], '*', 'id', reply, 'data', entry['data'], 'attempts', tostring(entry['attempts'] or '0'), 'enq', tostring(entry['enq'] or '0'))
  else
    redis.call('XADD', KEYS[1], '*', 'id', reply, 'attempts', '0', 'enq', '0')
  end
  redis.call('ZREM', KEYS[2], reply)
  redis.call('HDEL', KEYS[3], reply)
end
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
return { #due, first[2] and tonumber(first[2]) or -1 }
