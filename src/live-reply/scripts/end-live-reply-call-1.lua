--[[
  Ends the platform call begun with begin-live-reply-call-1.lua: records the message the stream is
  now shown in (or that it is in none) and lets a waiting final reply go on. A caller that is no
  longer the stream's shower (its claim expired and another took over) writes nothing.

  Input:
    KEYS[1] the stream's view record (hash: messageId, final, owner, ownerUntil, callUntil)

    ARGV[1] options, JSON: { "owner": string, "message": "keep" | "set" | "clear", "messageId"?: string }

  Output:
    1 - ended
    0 - the caller is not the shower any more: nothing written
    error - invalid arguments: nothing written
]]
--- @include "options"
if type(opts['owner']) ~= 'string' then return redis.error_reply('ERR endLiveReplyCall: owner must be a string') end
local message = opts['message']
if message ~= 'keep' and message ~= 'set' and message ~= 'clear' then return redis.error_reply('ERR endLiveReplyCall: message must be keep, set or clear') end
if message == 'set' and type(opts['messageId']) ~= 'string' then return redis.error_reply('ERR endLiveReplyCall: set needs a messageId string') end

if redis.call('HGET', KEYS[1], 'owner') ~= opts['owner'] then return 0 end
if message == 'set' then redis.call('HSET', KEYS[1], 'messageId', opts['messageId']) end
if message == 'clear' then redis.call('HDEL', KEYS[1], 'messageId') end
redis.call('HDEL', KEYS[1], 'callUntil')
return 1
