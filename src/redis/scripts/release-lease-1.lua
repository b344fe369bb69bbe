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
--- @include "fenced-options"

if holdsLease(KEYS[1], opts['fence']) then return redis.call('DEL', KEYS[1]) end
return 0
