--[[
  Steers waiting messages into the running turn: moves the inbox's leading messages whose busy mode
  is `steer` to the end of the processing list, in arrival order, only while `fence` holds the
  session's lease. The busy mode of a message is the chat's (`chatSettings.busyMode` in the meta,
  set by /mode), else the one the gateway tagged it with (`busyMode`), else `queue`. The first
  message that is not steered (another mode, an event, a malformed item) ends the take: the next
  turn takes it and everything after it, in order.

  Input:
    KEYS[1] the session's inbox (list)
    KEYS[2] the session's processing list (list)
    KEYS[3] the session's lease (string: the holder's fencing token)
    KEYS[4] the session's meta (hash; `chatSettings` read: JSON { "v": 1, "busyMode"?: mode })

    ARGV[1] options, JSON: { "fence": string }

  Output:
    { 1, the items moved... } - moved (possibly none)
    { 0 }                     - the lease is not held by `fence`: nothing moved
    error - invalid arguments, or chatSettings of an unknown version: nothing moved
]]
--- @include "fenced-options"

local chatMode = nil
local raw = redis.call('HGET', KEYS[4], 'chatSettings')
if raw then
  local ok, settings = pcall(cjson.decode, raw)
  if not ok or type(settings) ~= 'table' or settings['v'] ~= 1 then
    return redis.error_reply('ERR steerInbox: chatSettings of an unknown version (this version reads 1)')
  end
  if type(settings['busyMode']) == 'string' then chatMode = settings['busyMode'] end
end
if not holdsLease(KEYS[3], opts['fence']) then return {0} end

local moved = {1}
while true do
  local item = redis.call('LINDEX', KEYS[1], 0)
  if not item then break end
  local ok, value = pcall(cjson.decode, item)
  if not ok or type(value) ~= 'table' or type(value['id']) ~= 'string' or value['event'] ~= nil then break end
  local mode = chatMode or (type(value['busyMode']) == 'string' and value['busyMode']) or 'queue'
  if mode ~= 'steer' then break end
  redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
  moved[#moved + 1] = item
end
return moved
