--[[
  Enqueues one reply on an outbound shard, once per reply id: a small marker (SET NX, not the
  payload) says the id is waiting, being delivered, delivered within the marker's lifetime or
  failed; while it exists, adding the id again writes nothing. The reply also takes its place in
  its session's order (src/outbound/outbound-order.ts) here, in the order replies are added: two
  gateways taking one chat's consecutive replies then deliver them in that order, whichever
  checks first.

  Input:
    KEYS[1] the reply's marker (string, expires)
    KEYS[2] the shard's stream (fields `id`, `data`, `attempts`, `enq`)
    KEYS[3] the session's pending replies (sorted set: reply id -> ms when it entered; see enter-outbound-order-1.lua)

    ARGV[1] options, JSON: { "id": string, "nowMs": integer, "markerTtlS": integer > 0, "holdMs": integer > 0 (KEYS[3]'s TTL) }
    ARGV[2] the reply, JSON (stored as it is)

  Output:
    1 - added
    0 - the id is known (marker present): nothing written
    error - invalid arguments: nothing written
]]
--- @include "options"
local id, now, ttl, hold = opts['id'], tonumber(opts['nowMs']), tonumber(opts['markerTtlS']), tonumber(opts['holdMs'])
if type(id) ~= 'string' or id == '' then return redis.error_reply('ERR outboundAdd: id must be a non-empty string') end
if not now then return redis.error_reply('ERR outboundAdd: nowMs must be a number') end
if not ttl or ttl < 1 or ttl % 1 ~= 0 then return redis.error_reply('ERR outboundAdd: markerTtlS must be an integer >= 1') end
if not hold or hold < 1 or hold % 1 ~= 0 then return redis.error_reply('ERR outboundAdd: holdMs must be an integer >= 1') end
if type(ARGV[2]) ~= 'string' or ARGV[2] == '' then return redis.error_reply('ERR outboundAdd: the reply must be given') end

if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ttl) then return 0 end
redis.call('XADD', KEYS[2], '*', 'id', id, 'data', ARGV[2], 'attempts', '0', 'enq', string.format('%d', now))
-- Behind every reply of the session added before (whatever the producers' clocks say).
local score = now
local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
if top[2] and tonumber(top[2]) >= score then score = tonumber(top[2]) + 1 end
redis.call('ZADD', KEYS[3], string.format('%.0f', score), id)
redis.call('PEXPIRE', KEYS[3], hold)
return 1
