--[[
  Counts one message in a rate-limit window and gives the window its expiry in the same step.

  Input:
    KEYS[1] the window's counter (string, expires)

    ARGV[1] options, JSON: { "ttlSeconds": integer > 0 }

  Output:
    the count in the window, this message included
    error - invalid arguments: nothing written
]]
--- @include "options"
local ttl = tonumber(opts['ttlSeconds'])
if not ttl or ttl < 1 or ttl % 1 ~= 0 then return redis.error_reply('ERR countInWindow: ttlSeconds must be an integer >= 1') end

local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ttl) end
return n
