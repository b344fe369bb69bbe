--[[
  A claim that one holder has at a time and that expires unless renewed: taken when free, renewed
  by its holder, released by its holder (compare-and-delete). A claim that expired and was taken by
  another holder stays theirs. A yielding claim gives way to a claimer that does not yield.

  Input:
    KEYS[1] the claim (string: its holder's id, after `~` when it yields; expires)

    ARGV[1] options, JSON: {
              "holder": string,   -- who claims (not starting with `~`)
              "ttlMs": integer,   -- > 0: take or renew the claim for this long; 0: release it
              "yields": boolean   -- optional: taking or renewing, the claim yields (default false)
            }

  Output:
    1 - taken, renewed or released
    0 - held by another (or, releasing, already gone): nothing written
    error - invalid arguments: nothing written
]]
--- @include "options"
local holder, ttl, yields = opts['holder'], opts['ttlMs'], opts['yields']
if type(holder) ~= 'string' or holder == '' or string.sub(holder, 1, 1) == '~' then return redis.error_reply('ERR holdClaim: holder must be a non-empty string not starting with ~') end
if type(ttl) ~= 'number' or ttl % 1 ~= 0 or ttl < 0 then return redis.error_reply('ERR holdClaim: ttlMs must be an integer >= 0') end
if yields ~= nil and type(yields) ~= 'boolean' then return redis.error_reply('ERR holdClaim: yields must be a boolean') end

local current = redis.call('GET', KEYS[1])
if ttl == 0 then
  if current == holder or current == '~' .. holder then return redis.call('DEL', KEYS[1]) end
  return 0
end
local stored = yields and ('~' .. holder) or holder
-- Held by another: kept, unless it yields and this claim does not.
if current and current ~= stored and (yields or string.sub(current, 1, 1) ~= '~') then return 0 end
redis.call('SET', KEYS[1], stored, 'PX', string.format('%d', ttl))
return 1
