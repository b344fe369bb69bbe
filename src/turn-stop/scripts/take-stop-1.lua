--[[
  Takes the session's /stop request if it is meant for the turn holding `fence`: the turn it was
  written for, or a later turn that resumes the same messages (the first was taken by a worker that
  died), or any turn when it was written while messages waited ("queued").

  Input:
    KEYS[1] the session's stop request: "queued", or JSON { "fence": string, "first": message id }

    ARGV[1] options, JSON: { "fence": string, "first"?: the id of the turn's first message }

  Output:
    1 - the request was for this turn: deleted, the turn stops
    0 - no request, or one for another turn: nothing written
    error - invalid arguments: nothing written
]]
--- @include "fenced-options"
local first = opts['first']
if first ~= nil and type(first) ~= 'string' then return redis.error_reply('ERR takeStop: first must be a string') end

local request = redis.call('GET', KEYS[1])
if not request then return 0 end
if request == 'queued' then
  redis.call('DEL', KEYS[1])
  return 1
end
local ok, target = pcall(cjson.decode, request)
if not ok or type(target) ~= 'table' then return 0 end
if target['fence'] == opts['fence'] or (first ~= nil and first ~= '' and target['first'] == first) then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
