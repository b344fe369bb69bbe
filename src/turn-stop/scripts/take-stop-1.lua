--[[
  Takes the session's /stop request if it is meant for the turn holding `fence`.

  Input:
    KEYS[1] the session's stop request (string: a fencing token or "queued")

    ARGV[1] options, JSON: { "fence": string }

  Output:
    1 - the request was for this turn (its fence, or "queued"): deleted, the turn stops
    0 - no request, or one for another turn: nothing written
    error - invalid arguments: nothing written
]]
--- @include "lease-token"
local opts, bad = decodeFencedOptions('takeStop')
if not opts then return bad end

local request = redis.call('GET', KEYS[1])
if request == opts['fence'] or request == 'queued' then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
