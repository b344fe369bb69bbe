--[[
  A claim that one holder has at a time and that expires unless renewed: taken when free, renewed
  by its holder, released by its holder (compare-and-delete). A claim that expired and was taken by
  another holder stays theirs.

  Input:
    KEYS[1] the claim (string: its holder's id, expires)

    ARGV[1] options, JSON: {
              "holder": string,   -- who claims
              "ttlMs": integer    -- > 0: take or renew the claim for this long; 0: release it
            }

  Output:
    1 - taken, renewed or released
    0 - held by another (or, releasing, already gone): nothing written
    error - invalid arguments: nothing written
]]
--- @include "options"
local holder, ttl = opts['holder'], opts['ttlMs']
if type(holder) ~= 'string' or holder == '' then return redis.error_reply('ERR holdClaim: holder must be a non-empty string') end
if type(ttl) ~= 'number' or ttl % 1 ~= 0 or ttl < 0 then return redis.error_reply('ERR holdClaim: ttlMs must be an integer >= 0') end

local current = redis.call('GET', KEYS[1])
if ttl == 0 then
  if current == holder then return redis.call('DEL', KEYS[1]) end
  return 0
end
if current and current ~= holder then return 0 end
redis.call('SET', KEYS[1], holder, 'PX', string.format('%d', ttl))
return 1
