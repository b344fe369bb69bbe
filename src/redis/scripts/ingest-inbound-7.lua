--[[
  The whole Redis side of ingesting one plain message, in one step: drops a re-delivery, counts the
  message in its sender's rate-limit windows, refuses it when over the limit or too long, marks the
  session pending, marks the message seen and appends it to the inbox — and returns what the
  gateway's hygiene pre-check needs, so it decides without another round trip.

  Every key must hash to one slot on Redis Cluster. The pending index and the rate-limit counters
  are not in the session's slot: on a cluster the caller counts and marks them itself, passes
  `counters: 0, pending: false` and the seen key in their places (they are not touched then).

  Input:
    KEYS[1] the message's seen marker (string, expires)
    KEYS[2] the session's inbox (list)
    KEYS[3] the pending index (sorted set: session id -> ms when last given a message)
    KEYS[4] the session's meta (hash; read)
    KEYS[5] the session's history (list; its length is read)
    KEYS[6] the sender's rate-limit window counter (string, expires)
    KEYS[7] the sender address's window counter (string, expires; ignored unless counters = 2)

    ARGV[1] options, JSON: { "ttlSeconds": integer > 0, "seenValue": string, "nowMs": number,
            "counters": 0 | 1 | 2, "limit": integer > 0 (when counters > 0), "rateTtlSeconds": integer > 0,
            "tooLong": boolean, "pending": boolean, "fields": [meta field names] }
    ARGV[2] the message, JSON (appended as is)
    ARGV[3] the session id (the pending index's member)

  Output:
    {0, inbox length} - seen before (a re-delivery): nothing written
    {2}               - over the rate limit: counted, nothing else written
    {3}               - too long: counted, nothing else written
    {1, history length, inbox bytes (after the append), meta field values in `fields` order (nil when absent)...}
                      - accepted
    error - invalid arguments: nothing written
]]
--- @include "options"
local function whole(v, min) v = tonumber(v); return v and v >= min and v % 1 == 0 and v or nil end
local ttl = whole(opts['ttlSeconds'], 1)
if not ttl then return redis.error_reply('ERR ingestInbound: ttlSeconds must be an integer >= 1') end
if type(opts['seenValue']) ~= 'string' then return redis.error_reply('ERR ingestInbound: seenValue must be a string') end
local now = tonumber(opts['nowMs'])
if not now then return redis.error_reply('ERR ingestInbound: nowMs must be a number') end
local counters = whole(opts['counters'], 0)
if not counters or counters > 2 then return redis.error_reply('ERR ingestInbound: counters must be 0, 1 or 2') end
local limit = whole(opts['limit'], 1)
local rateTtl = whole(opts['rateTtlSeconds'], 1)
if counters > 0 and not (limit and rateTtl) then return redis.error_reply('ERR ingestInbound: limit and rateTtlSeconds must be integers >= 1') end
local fields = opts['fields']
if type(fields) ~= 'table' or #fields == 0 then return redis.error_reply('ERR ingestInbound: fields must be a non-empty list') end
if type(ARGV[2]) ~= 'string' or ARGV[2] == '' then return redis.error_reply('ERR ingestInbound: the message is missing') end
if type(ARGV[3]) ~= 'string' or ARGV[3] == '' then return redis.error_reply('ERR ingestInbound: the session id is missing') end

if redis.call('EXISTS', KEYS[1]) == 1 then return {0, redis.call('LLEN', KEYS[2])} end

-- Every counter counts the message (as separate counters would), then the verdict.
local over = false
for k = 6, 5 + counters do
  local n = redis.call('INCR', KEYS[k])
  if n == 1 then redis.call('EXPIRE', KEYS[k], rateTtl) end
  if n > limit then over = true end
end
if over then return {2} end
if opts['tooLong'] == true then return {3} end

if opts['pending'] == true then redis.call('ZADD', KEYS[3], now, ARGV[3]) end
redis.call('SET', KEYS[1], opts['seenValue'], 'EX', ttl)
redis.call('RPUSH', KEYS[2], ARGV[2])

local bytes = 0
for _, item in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do bytes = bytes + #item end
local reply = {1, redis.call('LLEN', KEYS[5]), bytes}
local values = redis.call('HMGET', KEYS[4], unpack(fields))
for k = 1, #fields do reply[k + 3] = values[k] end
return reply
