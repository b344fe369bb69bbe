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
local ok, opts = pcall(cjson.decode, ARGV[1])
if not ok or type(opts) ~= 'table' then return redis.error_reply('ERR takeStop: options must be a JSON object') end
if type(opts['fence']) ~= 'string' then return redis.error_reply('ERR takeStop: fence must be a string') end

local request = redis.call('GET', KEYS[1])
if request == opts['fence'] or request == 'queued' then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
