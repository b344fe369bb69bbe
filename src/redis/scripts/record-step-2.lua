--[[
  Under the lease: records one step of the running turn in its step log (a hash holding the
  turn's latest round). A new round (a model answer) replaces what the log held and stamps the
  log's format version; any other step joins the round of the same turn.

  Input:
    KEYS[1] the session's lease (string: the holder's fencing token)
    KEYS[2] the session's step log (hash: turn, format, answer, started:<call id>, result:<call id>, approval:<call id>, committed)

    ARGV[1] options, JSON: { "fence": string, "turnId": string, "field": string, "newRound": boolean, "format": integer > 0, "ttlMs": integer > 0 }
    ARGV[2] the value of the field

  Output:
    1 - recorded
    -1 - the lease is not held by fence: nothing written
    -2 - not a new round, and the log holds no round of this turn: nothing written
    error - invalid arguments: nothing written
]]
--- @include "fenced-options"
if type(opts['turnId']) ~= 'string' or opts['turnId'] == '' then return redis.error_reply('ERR recordStep: turnId must be a non-empty string') end
if type(opts['field']) ~= 'string' or opts['field'] == '' or opts['field'] == 'turn' or opts['field'] == 'format' then return redis.error_reply('ERR recordStep: field must be a string other than turn and format') end
local format = tonumber(opts['format'])
if not format or format < 1 or format % 1 ~= 0 then return redis.error_reply('ERR recordStep: format must be an integer >= 1') end
local ttl = tonumber(opts['ttlMs'])
if not ttl or ttl < 1 or ttl % 1 ~= 0 then return redis.error_reply('ERR recordStep: ttlMs must be an integer >= 1') end
if type(ARGV[2]) ~= 'string' then return redis.error_reply('ERR recordStep: the value is missing') end

if not holdsLease(KEYS[1], opts['fence']) then return -1 end
if opts['newRound'] == true then
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[2], 'turn', opts['turnId'], 'format', format, opts['field'], ARGV[2])
elseif redis.call('HGET', KEYS[2], 'turn') ~= opts['turnId'] then
  return -2
else
  redis.call('HSET', KEYS[2], opts['field'], ARGV[2])
end
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
