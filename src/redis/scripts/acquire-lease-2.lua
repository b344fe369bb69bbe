--[[
  Takes a lease if nobody holds it: a session's lease (the running turn), or a channel connection's
  (Telegram long polling, the Discord gateway connection of one bot). The fencing token grows for
  ever (meta field `fence`), so a late writer is always recognisable. With `holder` (channel
  leases) it also records who holds it: the holder fields name the gateway and the token it holds,
  so a reader shows a holder only while its token is the one in the lease.

  Input:
    KEYS[1] the lease (string: the holder's fencing token, expires)
    KEYS[2] the lease's meta (hash: fence; with a holder also holder, holderFence, heldSinceMs)

    ARGV[1] options, JSON: { "ttlMs": integer > 0, "holder"?: non-empty string }

  Output:
    the new fencing token (>= 1)
    0 - held by another: nothing written
    error - invalid arguments: nothing written
]]
--- @include "options"
local ttl = tonumber(opts['ttlMs'])
if not ttl or ttl < 1 or ttl % 1 ~= 0 then return redis.error_reply('ERR acquireLease: ttlMs must be an integer >= 1') end
local holder = opts['holder']
if holder ~= nil and (type(holder) ~= 'string' or holder == '') then return redis.error_reply('ERR acquireLease: holder must be a non-empty string') end

if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local token = redis.call('HINCRBY', KEYS[2], 'fence', 1)
redis.call('SET', KEYS[1], token, 'PX', ttl)
if holder ~= nil then
  local now = redis.call('TIME')
  local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  redis.call('HSET', KEYS[2], 'holder', holder, 'holderFence', token, 'heldSinceMs', nowMs)
end
return token
