--[[
  Budget counters, shared by the reserve and settle scripts. KEYS[3] is the limits hash set by
  `chatgate budgets set` (field "<level>:<subject>" → JSON { "v": 1, "unlimited": true } or
  { "v": 1, dailyUsd, monthlyUsd, dailyTokens, monthlyTokens }, src/budget/overrides.ts);
  KEYS[4..9] are the six counters (hash: um, ut used micro-USD and tokens, rm, rt reserved,
  n<unit>/x<unit> notice and exhaustion said). opts.counters[i] = { field, period ("day"|"month"),
  limitMicro, limitTokens (-1: none), expireAt (unix s) } for KEYS[3 + i], or { skip: true } for a
  level the call has no subject for (a compaction the CLI runs has no user): that key is never touched.

  effectiveLimits(c): the counter's limits in micro-USD and tokens (-1: none): the stored
  override of its level and subject when there is one, else the configured ones. A stored
  override of another format version is an error (never read as "no limit").
  readCounter(key): { um, ut, rm, rt } as numbers. int(x): x as an integer string (cjson numbers are floats).
  releaseReservation(id): gives back what reservation id holds on its counters (KEYS[1], KEYS[2]:
  the open reservations and their data) and forgets it; an id already released is a no-op.
]]
local function int(x)
  return string.format('%d', x)
end

local function effectiveLimits(c)
  local stored = redis.call('HGET', KEYS[3], c.field)
  if not stored then return c.limitMicro, c.limitTokens end
  local ok, o = pcall(cjson.decode, stored)
  if not ok or type(o) ~= 'table' or o.v ~= 1 then
    error({ err = 'ERR budget limits of ' .. c.field .. ' are not in format version 1: set them again with chatgate budgets' })
  end
  if o.unlimited == true then return -1, -1 end
  local usd = o[c.period == 'day' and 'dailyUsd' or 'monthlyUsd']
  local tokens = o[c.period == 'day' and 'dailyTokens' or 'monthlyTokens']
  return (type(usd) == 'number' and math.floor(usd * 1000000 + 0.5) or -1), (type(tokens) == 'number' and tokens or -1)
end

local function readCounter(key)
  local v = redis.call('HMGET', key, 'um', 'ut', 'rm', 'rt')
  return { um = tonumber(v[1]) or 0, ut = tonumber(v[2]) or 0, rm = tonumber(v[3]) or 0, rt = tonumber(v[4]) or 0 }
end

local function validCounters(opts)
  if type(opts.counters) ~= 'table' or #opts.counters ~= 6 then return false end
  for i = 1, 6 do
    local c = opts.counters[i]
    local skipped = type(c) == 'table' and c.skip == true
    if not skipped and (type(c) ~= 'table' or type(c.field) ~= 'string' or (c.period ~= 'day' and c.period ~= 'month') or type(c.limitMicro) ~= 'number' or type(c.limitTokens) ~= 'number' or type(c.expireAt) ~= 'number') then return false end
  end
  return true
end

local function releaseReservation(id)
  local data = redis.call('HGET', KEYS[2], id)
  if not data then return end
  local r = cjson.decode(data)
  for _, key in ipairs(r.k) do
    redis.call('HINCRBY', key, 'rm', int(-r.m))
    redis.call('HINCRBY', key, 'rt', int(-r.t))
  end
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
