--[[
  Appends one web chat reply chunk to its conversation's stream, at most once per delivery id: the
  append is its own delivery record (the entry carries the id), so a gateway that dies between the
  append and its delivery ledger write does not append the chunk again when the reply is retried.

  Input:
    KEYS[1] the conversation's reply stream (entries: text, format, at[, delivery][, liveReply][, choices][, edits])

    ARGV[1] options, JSON: {
              "maxLen": integer > 0,       -- entries kept (XADD MAXLEN ~); also how far back ids are looked for
              "ttlSeconds": integer > 0,   -- the stream's lifetime after this write
              "atMs": number,
              "deliveryId": string,        -- optional: the chunk's stable delivery id
              "liveReplyId": string,       -- optional: the live reply (partial replies shown as they come) this reply ends
              "choices": string,           -- optional: the reply's buttons, a JSON array of { label, command }
              "edits": string,             -- optional: the stream id of the reply this one replaces the text
                                           -- of; appended once per edited reply (a repeat answers the first)
              "wake": [channel, message]   -- optional: published after the append (and on a repeat), so
                                           -- waiting readers on every gateway wake with the write itself;
                                           -- after an append the message is followed by ' <stream id> <fields
                                           -- as a JSON array>', so a waiting reader needs no read of the stream
            }
    ARGV[2] the text
    ARGV[3] the format (`markdown` or `text`)

  Output:
    { stream id, 1 } - appended
    { stream id, 0 } - already appended under this delivery id, or an edit of that reply (nothing written)
    error - invalid arguments: nothing written
]]
--- @include "options"
local maxLen, ttl, at = tonumber(opts['maxLen']), tonumber(opts['ttlSeconds']), tonumber(opts['atMs'])
if not maxLen or maxLen < 1 or maxLen % 1 ~= 0 then return redis.error_reply('ERR appendWebReply: maxLen must be an integer >= 1') end
if not ttl or ttl < 1 or ttl % 1 ~= 0 then return redis.error_reply('ERR appendWebReply: ttlSeconds must be an integer >= 1') end
if not at then return redis.error_reply('ERR appendWebReply: atMs must be a number') end
-- The optional fields, each a non-empty string when given: { option, the entry's field }.
local OPTIONAL = { { 'deliveryId', 'delivery' }, { 'liveReplyId', 'liveReply' }, { 'choices', 'choices' }, { 'edits', 'edits' } }
local extra = {}
for _, names in ipairs(OPTIONAL) do
  local value = opts[names[1]]
  if value ~= nil and (type(value) ~= 'string' or value == '') then return redis.error_reply('ERR appendWebReply: ' .. names[1] .. ' must be a non-empty string') end
  extra[names[2]] = value
end
local delivery, edits = extra['delivery'], extra['edits']
local wake = opts['wake']
if wake ~= nil and (type(wake) ~= 'table' or type(wake[1]) ~= 'string' or type(wake[2]) ~= 'string') then return redis.error_reply('ERR appendWebReply: wake must be [channel, message]') end
if type(ARGV[2]) ~= 'string' or (ARGV[3] ~= 'markdown' and ARGV[3] ~= 'text') then return redis.error_reply('ERR appendWebReply: text and format (markdown or text) are required') end

if delivery or edits then
  local recent = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', maxLen)
  for _, entry in ipairs(recent) do
    local fields = entry[2]
    for i = 1, #fields - 1, 2 do
      if (fields[i] == 'delivery' and fields[i + 1] == delivery) or (edits and fields[i] == 'edits' and fields[i + 1] == edits) then
        if wake then redis.call('PUBLISH', wake[1], wake[2]) end
        return { entry[1], 0 }
      end
    end
  end
end
local fields = { 'text', ARGV[2], 'format', ARGV[3], 'at', string.format('%.0f', at) }
for _, names in ipairs(OPTIONAL) do
  if extra[names[2]] then
    fields[#fields + 1] = names[2]
    fields[#fields + 1] = extra[names[2]]
  end
end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxLen, '*', unpack(fields))
redis.call('EXPIRE', KEYS[1], ttl)
if wake then redis.call('PUBLISH', wake[1], wake[2] .. ' ' .. id .. ' ' .. cjson.encode(fields)) end
return { id, 1 }
