--[[
  Extends the lease if the fencing token still holds it.

  Input:
    KEYS[1] the session's lease (string: the holder's fencing token, expires)

    ARGV[1] options, JSON: { "fence": string, "ttlMs": integer > 0 }

  Output:
    1 - extended
    0 - lost (expired or another holder): nothing written
    error - invalid arguments: nothing written
]]
--- @include "fenced-options"
local ttl = tonumber(opts['ttlMs'])
if not ttl or ttl < 1 or ttl % 1 ~= 0 then return redis.error_reply('ERR renewLease: ttlMs must be an integer >= 1') end

if holdsLease(KEYS[1], opts['fence']) then return redis.call('PEXPIRE', KEYS[1], ttl) end
return 0
