--[[
  Settles a reservation with the usage the provider reported, and says which limits the call
  brought to the notice share or used up (each said once per counter and period).

  Input (the keys of budget-reserve-9.lua):
    KEYS[1] open reservations (sorted set: id → lease end, ms)
    KEYS[2] reservation data (hash: id → JSON { m, t } reserved micro-USD and tokens)
    KEYS[3] limits set by operators (hash, see budget-counters)
    KEYS[4] counter: user, this day
    KEYS[5] counter: user, this month
    KEYS[6] counter: chat, this day
    KEYS[7] counter: chat, this month
    KEYS[8] counter: deployment, this day
    KEYS[9] counter: deployment, this month

    ARGV[1] options, JSON: { "id": string, "micro": n, "tokens": n, "noticePercent": n,
      "counters": [6 × see budget-counters; a skipped one's key is not touched] }

  Output:
    JSON { "events": [ { "i": n, "kind": "near"|"exhausted", "unit": "usd"|"tokens", "limit": n } ] }
    error - invalid arguments, or a stored override of another format version: nothing written

  A reservation already released (its lease ran out) is not released twice; the usage still counts.
]]
--- @include "decode-options"
--- @include "budget-counters"
local opts, bad = decodeOptions('budgetSettle')
if not opts then return bad end
if type(opts.id) ~= 'string' or type(opts.micro) ~= 'number' or type(opts.tokens) ~= 'number' or type(opts.noticePercent) ~= 'number' or not validCounters(opts) then
  return redis.error_reply('ERR budgetSettle: needs id, micro, tokens, noticePercent and six counters')
end
-- Limits first: a stored override this script cannot read fails the call before anything is written.
local limits = {}
for i = 1, 6 do
  if not opts.counters[i].skip then
    local lm, lt = effectiveLimits(opts.counters[i])
    limits[i] = { lm, lt }
  end
end
releaseReservation(opts.id)
local events = {}
local function check(i, unit, used, limit)
  if limit < 0 then return end
  if used >= limit then
    if redis.call('HSETNX', KEYS[3 + i], 'x' .. unit, 1) == 1 then table.insert(events, { i = i, kind = 'exhausted', unit = unit, limit = limit }) end
  elseif used * 100 >= limit * opts.noticePercent then
    if redis.call('HSETNX', KEYS[3 + i], 'n' .. unit, 1) == 1 then table.insert(events, { i = i, kind = 'near', unit = unit, limit = limit }) end
  end
end
for i = 1, 6 do
  if limits[i] then
    local key = KEYS[3 + i]
    local um = redis.call('HINCRBY', key, 'um', int(opts.micro))
    local ut = redis.call('HINCRBY', key, 'ut', int(opts.tokens))
    redis.call('EXPIREAT', key, int(opts.counters[i].expireAt))
    check(i, 'usd', um, limits[i][1])
    check(i, 'tokens', ut, limits[i][2])
  end
end
return cjson.encode({ events = events })
