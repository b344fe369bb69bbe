--[[
  decodeFencedOptions(script): the options as decodeOptions gives them, refused with
  `ERR <script>: fence must be a string` unless they carry the caller's fencing token `fence`.
  holdsLease(key, fence): whether the lease at `key` (string: the holder's fencing token) holds
  `fence`, and the token it holds (false when nobody does).
]]
--- @include "decode-options"
local function decodeFencedOptions(script)
  local opts, bad = decodeOptions(script)
  if not opts then return nil, bad end
  if type(opts['fence']) ~= 'string' then return nil, redis.error_reply('ERR ' .. script .. ': fence must be a string') end
  return opts
end

local function holdsLease(key, fence)
  local token = redis.call('GET', key)
  return token == fence, token
end
