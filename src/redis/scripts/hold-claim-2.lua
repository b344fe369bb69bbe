--[[
  A claim that one holder has at a time and that expires unless renewed: taken when free, renewed
  by its holder, released by its holder (compare-and-delete). A claim that expired and was taken by
  another holder stays theirs. A yielding claim gives way to a claimer that does not yield.
  Every yielding claimer is also kept in KEYS[2] until it releases or stops renewing, whether it
  has KEYS[1] or not: when the holder lets KEYS[1] go, the claimers it held up are still known.

  Input:
    KEYS[1] the claim (string: its holder's id, after `~` when it yields; expires)
    KEYS[2] the yielding claimers (sorted set: holder id -> expiry, ms of the server's clock; the
            key expires with its last member)

    ARGV[1] options, JSON: {
              "holder": string,   -- who claims (not starting with `~`)
              "ttlMs": integer,   -- > 0: take or renew the claim for this long; 0: release it
              "yields": boolean   -- optional: taking or renewing, the claim yields (default false)
            }

  Output:
    1 - taken, renewed or released
    0 - held by another (or, releasing, already gone): nothing written but the yielding claimer
    error - invalid arguments: nothing written
]]
--- @include "options"
local holder, ttl, yields = opts['holder'], opts['ttlMs'], opts['yields']
if type(holder) ~= 'string' or holder == '' or string.sub(holder, 1, 1) == '~' then return redis.error_reply('ERR holdClaim: holder must be a non-empty string not starting with ~') end
if type(ttl) ~= 'number' or ttl % 1 ~= 0 or ttl < 0 then return redis.error_reply('ERR holdClaim: ttlMs must be an integer >= 0') end
if yields ~= nil and type(yields) ~= 'boolean' then return redis.error_reply('ERR holdClaim: yields must be a boolean') end

local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', nowMs)

local current = redis.call('GET', KEYS[1])
if ttl == 0 then
  redis.call('ZREM', KEYS[2], holder)
  if current == holder or current == '~' .. holder then return redis.call('DEL', KEYS[1]) end
  return 0
end
if yields then
  redis.call('ZADD', KEYS[2], nowMs + ttl, holder)
  if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
end
local stored = yields and ('~' .. holder) or holder
-- Held by another: kept, unless it yields and this claim does not.
if current and current ~= stored and (yields or string.sub(current, 1, 1) ~= '~') then return 0 end
redis.call('SET', KEYS[1], stored, 'PX', string.format('%d', ttl))
return 1
