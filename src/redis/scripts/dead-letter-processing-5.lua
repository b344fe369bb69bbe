--[[
  Under the lease: moves the processing list to the dead letters (the newest kept), puts the
  notice in the outbox when anything moved, and resets the turn's bookkeeping.

  Input:
    KEYS[1] the session's processing list (list)
    KEYS[2] the session's dead letters (list)
    KEYS[3] the session's lease (string: the holder's fencing token)
    KEYS[4] the session's meta (hash)
    KEYS[5] the session's outbox (list)

    ARGV[1] options, JSON: { "fence": string, "retention": integer > 0 }
    ARGV[2] the notice, JSON (appended as is), or '' for none

  Output:
    the number of messages moved
    -1 - the lease is not held by fence: nothing written
    error - invalid arguments: nothing written
]]
--- @include "fenced-options"
local retention = tonumber(opts['retention'])
if not retention or retention < 1 or retention % 1 ~= 0 then return redis.error_reply('ERR deadLetterProcessing: retention must be an integer >= 1') end
if type(ARGV[2]) ~= 'string' then return redis.error_reply('ERR deadLetterProcessing: the notice is missing') end

if not holdsLease(KEYS[3], opts['fence']) then return -1 end
local moved = 0
while redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT') do moved = moved + 1 end
redis.call('LTRIM', KEYS[2], -retention, -1)
if moved > 0 and ARGV[2] ~= '' then redis.call('RPUSH', KEYS[5], ARGV[2]) end
redis.call('HSET', KEYS[4], 'turnInboundIds', '[]')
redis.call('HINCRBY', KEYS[4], 'version', 1)
return moved
