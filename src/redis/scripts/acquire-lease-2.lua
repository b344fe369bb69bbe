--[[
  Takes the session's lease if nobody holds it. The fencing token grows for ever (meta field
  `fence`), so a late writer is always recognisable.

  Input:
    KEYS[1] the session's lease (string: the holder's fencing token, expires)
    KEYS[2] the session's meta (hash)

    ARGV[1] options, JSON: { "ttlMs": integer > 0 }

  Output:
    the new fencing token (>= 1)
    0 - held by another: nothing written
    error - invalid arguments: nothing written
]]
local ok, opts = pcall(cjson.decode, ARGV[1])
if not ok or type(opts) ~= 'table' then return redis.error_reply('ERR acquireLease: options must be a JSON object') end
local ttl = tonumber(opts['ttlMs'])
if not ttl or ttl < 1 or ttl % 1 ~= 0 then return redis.error_reply('ERR acquireLease: ttlMs must be an integer >= 1') end

if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local token = redis.call('HINCRBY', KEYS[2], 'fence', 1)
redis.call('SET', KEYS[1], token, 'PX', ttl)
return token
