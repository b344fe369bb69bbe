--[[
  Records a /stop request for the session's turn, if one is running or waiting.

  Input:
    KEYS[1] the session's lease (string: the holder's fencing token, expires)
    KEYS[2] the session's processing list (items of the running turn)
    KEYS[3] the session's inbox (items waiting for a turn)
    KEYS[4] the session's stop request (written here with a TTL): "queued", or JSON
            { "fence": the running turn's fencing token, "first": the id of its first message }

    ARGV[1] options, JSON: { "ttlMs": number, "interrupt"?: message id }
            With `interrupt` (a message in `interrupt` busy mode): only a running turn is stopped, and
            only one that has not taken that message itself ("idle" otherwise, nothing written).

  Output:
    "running:<fence>" - a turn holds the lease and has taken messages: the stop targets that turn
                        (its fence, or whichever later turn resumes its messages)
    "queued"          - messages wait for a turn (or a crashed turn's wait for its retry): the next turn stops
    "idle"            - nothing to stop: nothing written
    error - invalid arguments: nothing written
]]
--- @include "options"
local ttl = tonumber(opts['ttlMs'])
if not ttl or ttl < 1 then return redis.error_reply('ERR requestStop: ttlMs must be a number >= 1') end

local interrupt = opts['interrupt']
if interrupt ~= nil and type(interrupt) ~= 'string' then return redis.error_reply('ERR requestStop: interrupt must be a message id') end

local fence = redis.call('GET', KEYS[1])
local taken = redis.call('LLEN', KEYS[2])
if interrupt ~= nil then
  if not fence or taken == 0 then return 'idle' end
  for _, item in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
    local ok, value = pcall(cjson.decode, item)
    if ok and type(value) == 'table' and value['id'] == interrupt then return 'idle' end
  end
end
if fence and taken > 0 then
  local ok, first = pcall(cjson.decode, redis.call('LINDEX', KEYS[2], 0))
  local firstId = (ok and type(first) == 'table' and type(first['id']) == 'string') and first['id'] or ''
  redis.call('SET', KEYS[4], cjson.encode({ fence = fence, first = firstId }), 'PX', math.floor(ttl))
  return 'running:' .. fence
end
if taken > 0 or redis.call('LLEN', KEYS[3]) > 0 then
  redis.call('SET', KEYS[4], 'queued', 'PX', math.floor(ttl))
  return 'queued'
end
return 'idle'
