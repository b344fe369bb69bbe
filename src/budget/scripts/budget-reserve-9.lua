--[[
  Reserves a model call's worst case against every budget level at once, or reads the counters.

  Input:
    KEYS[1] open reservations (sorted set: id → lease end, ms)
    KEYS[2] reservation data (hash: id → JSON { m, t } reserved micro-USD and tokens)
    KEYS[3] limits set by operators (hash, see budget-counters)
    KEYS[4] counter: user, this day
    KEYS[5] counter: user, this month
    KEYS[6] counter: chat, this day
    KEYS[7] counter: chat, this month
    KEYS[8] counter: deployment, this day
    KEYS[9] counter: deployment, this month

    ARGV[1] options, JSON: { "now": ms, "leaseMs": ms, "id": string, "needMicro": n (-1: unpriced),
      "needTokens": n, "dryRun": bool, "counters": [6 × see budget-counters] }

  Output:
    JSON { "ok": true } - reserved (nothing written when dryRun)
    { "ok": false, "i": n, "unit": "usd"|"tokens", "limit": n } - counter i (1..6) is used up: nothing written
    with dryRun, also "state": six arrays of { um, ut, rm, rt, limitMicro, limitTokens }
    error - invalid arguments: nothing written

  A call is let through while a counter's used + reserved is below its limit, so concurrent
  workers overrun a limit by at most one call's worst case. Expired reservations (a worker died
  between reserve and settle) are released first, up to 50 per call.
]]
--- @include "decode-options"
--- @include "budget-counters"
local opts, bad = decodeOptions('budgetReserve')
if not opts then return bad end
if type(opts.now) ~= 'number' or type(opts.needTokens) ~= 'number' or type(opts.needMicro) ~= 'number' or not validCounters(opts) then
  return redis.error_reply('ERR budgetReserve: needs now, needMicro, needTokens and six counters')
end
if not opts.dryRun then
  if type(opts.id) ~= 'string' or type(opts.leaseMs) ~= 'number' then return redis.error_reply('ERR budgetReserve: needs id and leaseMs') end
  local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', int(opts.now), 'LIMIT', 0, 50)
  for _, id in ipairs(expired) do
    local data = redis.call('HGET', KEYS[2], id)
    if data then
      local r = cjson.decode(data)
      for _, key in ipairs(r.k) do
        redis.call('HINCRBY', key, 'rm', int(-r.m))
        redis.call('HINCRBY', key, 'rt', int(-r.t))
      end
    end
    redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
  end
end
local state = {}
for i = 1, 6 do
  local c = readCounter(KEYS[3 + i])
  local lm, lt = effectiveLimits(opts.counters[i])
  state[i] = { c.um, c.ut, c.rm, c.rt, lm, lt }
  if lm >= 0 and opts.needMicro >= 0 and c.um + c.rm >= lm then
    return cjson.encode({ ok = false, i = i, unit = 'usd', limit = lm, state = opts.dryRun and state or nil })
  end
  if lt >= 0 and c.ut + c.rt >= lt then
    return cjson.encode({ ok = false, i = i, unit = 'tokens', limit = lt, state = opts.dryRun and state or nil })
  end
end
if opts.dryRun then return cjson.encode({ ok = true, state = state }) end
local micro = math.max(opts.needMicro, 0)
local keys = {}
for i = 1, 6 do
  local key = KEYS[3 + i]
  keys[i] = key
  redis.call('HINCRBY', key, 'rm', int(micro))
  redis.call('HINCRBY', key, 'rt', int(opts.needTokens))
  redis.call('EXPIREAT', key, int(opts.counters[i].expireAt))
end
redis.call('ZADD', KEYS[1], int(opts.now + opts.leaseMs), opts.id)
redis.call('HSET', KEYS[2], opts.id, cjson.encode({ k = keys, m = micro, t = opts.needTokens }))
return cjson.encode({ ok = true })
