--[[
  Moves every inbox item to the processing list and returns the processing list, oldest first:
  items a crashed turn already took stay first, the inbox follows in arrival order. An item that
  is not an inbound message (no string id, channel, chatId and text) would fail every turn: it
  goes to the dead letters instead.

  Input:
    KEYS[1] the session's inbox (list)
    KEYS[2] the session's processing list (list)
    KEYS[3] the session's dead letters (list)

  Output:
    { number of malformed items moved to the dead letters, { the processing list's items } }
]]
while redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT') do end
local good, bad = {}, 0
for _, item in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
  local ok, value = pcall(cjson.decode, item)
  if ok and type(value) == 'table' and type(value['id']) == 'string' and type(value['channel']) == 'string'
    and type(value['chatId']) == 'string' and type(value['text']) == 'string' then
    table.insert(good, item)
  else
    redis.call('LREM', KEYS[2], 1, item)
    redis.call('RPUSH', KEYS[3], item)
    bad = bad + 1
  end
end
return {bad, good}
