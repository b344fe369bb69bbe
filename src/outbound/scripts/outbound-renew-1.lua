--[[
  Renews the claim of the replies a gateway is delivering: each entry still pending under
  `consumer` has its idle time reset (XCLAIM … JUSTID: the delivery count, the stall count, stays).
  An entry another consumer claimed meanwhile (this gateway stalled past the lock, and a live one
  took the reply over) is left to that consumer, so the two do not both keep delivering it. An
  entry no longer pending at all was settled (delivered, delayed or failed) and is not counted.

  Input:
    KEYS[1] the shard's stream

    ARGV[1] options, JSON: { "group": string, "consumer": string }
    ARGV[2..] the entry ids

  Output:
    the number of entries another consumer holds now (taken over)
    error - invalid arguments: nothing written
]]
--- @include "options"
local group, consumer = opts['group'], opts['consumer']
if type(group) ~= 'string' or type(consumer) ~= 'string' or consumer == '' then return redis.error_reply('ERR outboundRenew: group and consumer must be strings') end

local lost = 0
for i = 2, #ARGV do
  local pending = redis.call('XPENDING', KEYS[1], group, ARGV[i], ARGV[i], 1)
  if #pending == 1 then
    if pending[1][2] == consumer then
      redis.call('XCLAIM', KEYS[1], group, consumer, 0, ARGV[i], 'JUSTID')
    else
      lost = lost + 1
    end
  end
end
return lost
