--[[
  Lets one gateway make one platform call that shows a partial reply (send, edit, draft, delete),
  or says why not. The caller becomes the stream's shower for `ownerMs` (renewed by each call);
  while its claim lives no other gateway shows the stream, and while its call runs (`callMs` at
  most) the final reply waits for it (see mark-live-reply-final-1.lua): a preview can never land
  after the final.

  Input:
    KEYS[1] the stream's view record (hash: messageId, final, owner, ownerUntil, callUntil; expires)

    ARGV[1] options, JSON: { "owner": string, "ownerMs": integer, "callMs": integer, "ttlMs": integer }

  Output:
    { "final" }             - the final reply took the stream over: show nothing more
    { "other" }             - another gateway shows this stream: nothing written
    { "ok", messageId|nil } - go ahead; the message the stream is shown in, if any
    error - invalid arguments: nothing written
]]
--- @include "options"
if type(opts['owner']) ~= 'string' or opts['owner'] == '' then return redis.error_reply('ERR beginLiveReplyCall: owner must be a non-empty string') end
for _, name in ipairs({ 'ownerMs', 'callMs', 'ttlMs' }) do
  if type(opts[name]) ~= 'number' or opts[name] < 1 then return redis.error_reply('ERR beginLiveReplyCall: ' .. name .. ' must be a positive number') end
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local view = redis.call('HMGET', KEYS[1], 'final', 'owner', 'ownerUntil', 'messageId')
if view[1] == '1' then return { 'final' } end
if view[2] and view[2] ~= opts['owner'] and tonumber(view[3] or '0') > now then return { 'other' } end

local callUntil = now + opts['callMs']
redis.call('HSET', KEYS[1], 'owner', opts['owner'], 'ownerUntil', math.max(now + opts['ownerMs'], callUntil), 'callUntil', callUntil)
redis.call('PEXPIRE', KEYS[1], opts['ttlMs'])
return { 'ok', view[4] }
