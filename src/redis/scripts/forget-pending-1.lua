--[[
  Removes sessions from the pending index, each only if nobody marked it again since the sweeper
  looked (its score did not move past the one seen). One call takes a whole sweep batch.

  Input:
    KEYS[1] the pending index (sorted set: session id -> ms when last given a message)

    ARGV[1] options, JSON: { "entries": [[sessionId: string, seenScore: number], ...] }

  Output:
    the number of sessions removed (the others were marked again meanwhile, or are gone: kept)
    error - invalid arguments: nothing written
]]
--- @include "options"
local entries = opts['entries']
if type(entries) ~= 'table' then return redis.error_reply('ERR forgetPending: entries must be a list') end
for _, entry in ipairs(entries) do
  if type(entry) ~= 'table' or type(entry[1]) ~= 'string' or not tonumber(entry[2]) then
    return redis.error_reply('ERR forgetPending: each entry must be [sessionId, seenScore]')
  end
end

local removed = 0
for _, entry in ipairs(entries) do
  local score = redis.call('ZSCORE', KEYS[1], entry[1])
  if score and tonumber(score) <= tonumber(entry[2]) then removed = removed + redis.call('ZREM', KEYS[1], entry[1]) end
end
return removed
