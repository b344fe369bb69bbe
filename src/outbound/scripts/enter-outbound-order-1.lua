--[[
  Per-session order of the outbound replies not delivered yet: the one being delivered, those
  waiting for a retry and those held back behind them. A member's score is when it entered
  (kept above every earlier one): the set's order is the order replies entered it, and entries
  older than the hold stop counting (they are pruned first).

  Input:
    KEYS[1] the session's pending replies (sorted set: job id -> ms when it entered)

    ARGV[1] options, JSON: {
              "jobId": string,
              "nowMs": number,
              "holdMs": integer > 0,   -- how long an entry holds later ones back (and the key's TTL)
              "mode": "check" | "pending"
            }
              check: may the reply go now? It is entered (behind the others, or keeping its
                     place) and may go when it is the oldest entry: an active reply whose gateway
                     died keeps its place, so the later ones wait for its retry.
              pending: enter the reply (it failed and will be retried); an entered one keeps its place.

  Output:
    1 - check: it may be delivered now; pending: entered (or already there)
    0 - check: held back (and entered)
    error - invalid arguments: nothing written
]]
--- @include "options"
local member, mode = opts['jobId'], opts['mode']
local now, hold = tonumber(opts['nowMs']), tonumber(opts['holdMs'])
if type(member) ~= 'string' or member == '' then return redis.error_reply('ERR enterOutboundOrder: jobId must be a non-empty string') end
if mode ~= 'check' and mode ~= 'pending' then return redis.error_reply('ERR enterOutboundOrder: mode must be check or pending') end
if not now then return redis.error_reply('ERR enterOutboundOrder: nowMs must be a number') end
if not hold or hold < 1 or hold % 1 ~= 0 then return redis.error_reply('ERR enterOutboundOrder: holdMs must be an integer >= 1') end

-- No reply of the session pending (the common case): this one enters first, and may go.
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('ZADD', KEYS[1], string.format('%.0f', now), member)
  redis.call('PEXPIRE', KEYS[1], hold)
  return 1
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%.0f', now - hold))
local mine = redis.call('ZSCORE', KEYS[1], member)
if mine then
  if mode == 'pending' then return 1 end
  local first = redis.call('ZRANGE', KEYS[1], 0, 0)
  if first[1] == member then return 1 end
  return 0
end
local score = now
local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if top[2] and tonumber(top[2]) >= score then score = tonumber(top[2]) + 1 end
redis.call('ZADD', KEYS[1], string.format('%.0f', score), member)
redis.call('PEXPIRE', KEYS[1], hold)
if mode == 'pending' then return 1 end
if redis.call('ZRANGE', KEYS[1], 0, 0)[1] == member then return 1 end
return 0
