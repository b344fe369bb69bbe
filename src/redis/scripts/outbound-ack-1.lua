--[[
  Settles a delivered reply: acknowledged in the consumer group and deleted from the stream, in
  one step (an acknowledged entry left in the stream would count as waiting for ever). The
  reply's marker stays until it expires, so re-adding the reply stays a no-op.

  Input:
    KEYS[1] the shard's stream

    ARGV[1] options, JSON: { "group": string, "entryId": string }

  Output:
    1 - settled
    0 - the entry was no longer pending (another consumer settled it): only the delete ran
    error - invalid arguments: nothing written
]]
local ok, opts = pcall(cjson.decode, ARGV[1])
if not ok or type(opts) ~= 'table' then return redis.error_reply('ERR outboundAck: options must be a JSON object') end
local group, entry = opts['group'], opts['entryId']
if type(group) ~= 'string' or type(entry) ~= 'string' then return redis.error_reply('ERR outboundAck: group and entryId must be strings') end

local acked = redis.call('XACK', KEYS[1], group, entry)
redis.call('XDEL', KEYS[1], entry)
return acked
