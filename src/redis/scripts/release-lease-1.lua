--[[
  Releases the lease if the fencing token still holds it.

  Input:
    KEYS[1] the session's lease (string: the holder's fencing token, expires)

    ARGV[1] options, JSON: { "fence": string }

  Output:
    1 - released
    0 - already gone or held by another: nothing written
    error - invalid arguments: nothing written
]]
local ok, opts = pcall(cjson.decode, ARGV[1])
if not ok or type(opts) ~= 'table' then return redis.error_reply('ERR releaseLease: options must be a JSON object') end
if type(opts['fence']) ~= 'string' then return redis.error_reply('ERR releaseLease: fence must be a string') end

if redis.call('GET', KEYS[1]) == opts['fence'] then return redis.call('DEL', KEYS[1]) end
return 0
