--[[
  Bytes waiting in an inbox, summed inside Redis (no items cross the wire).

  Input:
    KEYS[1] the session's inbox (list)

  Output:
    the summed byte length of the inbox's items
]]
local n = 0
for _, v in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do n = n + #v end
return n
