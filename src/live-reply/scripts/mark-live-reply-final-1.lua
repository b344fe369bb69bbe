--[[
  Marks a stream final: from now on no gateway begins a call that shows a partial of it
  (begin-live-reply-call-1.lua answers "final"). A call already running may still land: the reply
  says how long the final reply must wait for it at most (it ends with end-live-reply-call-1.lua).

  Input:
    KEYS[1] the stream's view record (hash: messageId, final, owner, ownerUntil, callUntil; expires)

    ARGV[1] options, JSON: { "ttlMs": integer }

  Output:
    { messageId|nil, waitMs } - the message the stream is shown in, if any; ms the running call may still take (0: none)
    error - invalid arguments: nothing written
]]
--- @include "options"
if type(opts['ttlMs']) ~= 'number' or opts['ttlMs'] < 1 then return redis.error_reply('ERR markLiveReplyFinal: ttlMs must be a positive number') end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local view = redis.call('HMGET', KEYS[1], 'messageId', 'callUntil')
redis.call('HSET', KEYS[1], 'final', '1')
redis.call('PEXPIRE', KEYS[1], opts['ttlMs'])
return { view[1], math.max(0, tonumber(view[2] or '0') - now) }
