--[[
  Accepts an inbound message: marks it seen and appends it to the session's inbox in one step,
  so a crash can neither lose an accepted message nor let a re-delivery in twice.

  Input:
    KEYS[1] the message's seen marker (string, expires)
    KEYS[2] the session's inbox (list)

    ARGV[1] options, JSON: { "ttlSeconds": integer > 0, "seenValue": string }
    ARGV[2] the message, JSON (appended as is)

  Output:
    1 - accepted
    0 - seen before (a re-delivery): nothing written
    error - invalid arguments: nothing written
]]
--- @include "decode-options"
local opts, bad = decodeOptions('acceptInbound')
if not opts then return bad end
local ttl = tonumber(opts['ttlSeconds'])
if not ttl or ttl < 1 or ttl % 1 ~= 0 then return redis.error_reply('ERR acceptInbound: ttlSeconds must be an integer >= 1') end
if type(opts['seenValue']) ~= 'string' then return redis.error_reply('ERR acceptInbound: seenValue must be a string') end
if type(ARGV[2]) ~= 'string' or ARGV[2] == '' then return redis.error_reply('ERR acceptInbound: the message is missing') end

if redis.call('SET', KEYS[1], opts['seenValue'], 'NX', 'EX', ttl) then
  redis.call('RPUSH', KEYS[2], ARGV[2])
  return 1
end
return 0
