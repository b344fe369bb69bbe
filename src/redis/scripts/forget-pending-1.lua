--[[
  Removes a session from the pending index only if nobody marked it again since the sweeper
  looked (its score did not move past the one seen).

  Input:
    KEYS[1] the pending index (sorted set: session id -> ms when last given a message)

    ARGV[1] options, JSON: { "sessionId": string, "seenScore": number }

  Output:
    1 - removed
    0 - marked again meanwhile (or gone): kept
    error - invalid arguments: nothing written
]]
local ok, opts = pcall(cjson.decode, ARGV[1])
if not ok or type(opts) ~= 'table' then return redis.error_reply('ERR forgetPending: options must be a JSON object') end
if type(opts['sessionId']) ~= 'string' then return redis.error_reply('ERR forgetPending: sessionId must be a string') end
local seen = tonumber(opts['seenScore'])
if not seen then return redis.error_reply('ERR forgetPending: seenScore must be a number') end

local score = redis.call('ZSCORE', KEYS[1], opts['sessionId'])
if score and tonumber(score) <= seen then return redis.call('ZREM', KEYS[1], opts['sessionId']) end
return 0
