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
      "needTokens": n, "dryRun": bool, "counters": [6 × see budget-counters; a skipped one's key is not touched] }

  Output:
    JSON { "ok": true } - reserved (nothing written when dryRun)
    { "ok": false, "i": n, "unit": "usd"|"tokens", "limit": n, "first": bool } - counter i (1..6) is used
      up: nothing written but its exhaustion mark ("first": this call set it, so nobody has said it yet)
    with dryRun, also "state": six arrays of { um, ut, rm, rt, limitMicro, limitTokens }
    error - invalid arguments, or a stored override of another format version: nothing written

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
    releaseReservation(id)
    redis.call('ZREM', KEYS[1], id) -- an id without data (never expected) leaves the set too
  end
end
local state = {}
for i = 1, 6 do
  if opts.counters[i].skip then
    state[i] = { 0, 0, 0, 0, -1, -1 }
  else
    local c = readCounter(KEYS[3 + i])
    local lm, lt = effectiveLimits(opts.counters[i])
    state[i] = { c.um, c.ut, c.rm, c.rt, lm, lt }
    local unit, limit = nil, nil
    if lm >= 0 and opts.needMicro >= 0 and c.um + c.rm >= lm then unit, limit = 'usd', lm
    elseif lt >= 0 and c.ut + c.rt >= lt then unit, limit = 'tokens', lt end
    if unit then
      if opts.dryRun then return cjson.encode({ ok = false, i = i, unit = unit, limit = limit, state = state }) end
      -- The first refusal of a counter says "exhausted" when no settle did (a limit lowered below the use).
      local first = redis.call('HSETNX', KEYS[3 + i], 'x' .. unit, 1) == 1
      if first then redis.call('EXPIREAT', KEYS[3 + i], int(opts.counters[i].expireAt)) end
      return cjson.encode({ ok = false, i = i, unit = unit, limit = limit, first = first })
    end
  end
end
if opts.dryRun then return cjson.encode({ ok = true, state = state }) end
local micro = math.max(opts.needMicro, 0)
local keys = {}
for i = 1, 6 do
  if not opts.counters[i].skip then
    local key = KEYS[3 + i]
    keys[#keys + 1] = key
    redis.call('HINCRBY', key, 'rm', int(micro))
    redis.call('HINCRBY', key, 'rt', int(opts.needTokens))
    redis.call('EXPIREAT', key, int(opts.counters[i].expireAt))
  end
end
redis.call('ZADD', KEYS[1], int(opts.now + opts.leaseMs), opts.id)
redis.call('HSET', KEYS[2], opts.id, cjson.encode({ k = keys, m = micro, t = opts.needTokens }))
return cjson.encode({ ok = true })
