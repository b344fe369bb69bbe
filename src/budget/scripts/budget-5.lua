--[[
  The budget counters: reserve a model call's worst case against every level at once, settle it
  with the provider's usage, read the counters, zero what a subject used, or change an operator's limits.

  Input:
    KEYS[1] limits set by operators (hash: "<level>:<subject>" → JSON { "v": 1, "unlimited": true }
      or { "v": 1, dailyUsd, monthlyUsd, dailyTokens, monthlyTokens }, src/budget/overrides.ts)
    KEYS[2] the counters of one month (hash: "<level>:<subject>:<period id>" → JSON { "v": 1,
      "um", "ut": used micro-USD and tokens, "uu": tokens of unpriced calls (in "ut" only), "r": { "<bucket>": [micro, tokens] }: reserved, by the
      minute their leases end, "s": { "n<unit>"|"x<unit>": 1 }: notice and exhaustion said };
      "limit:<level>:<subject>": this month's copy of KEYS[1]'s field, "$limits": the copy was made)
    KEYS[3] the user's exhaustion marker (string, JSON { "v": 1, level, period, unit, limit, used,
      resetsAtMs, src: "override"|"config" }, kept until the period ends)
    KEYS[4] the chat's exhaustion marker (the same)
    KEYS[5] the deployment's exhaustion marker (the same)
    Every marker set or dropped is published on KEYS[1] .. ':markers' as JSON { key, marker } (no
    marker: dropped), for the gateways' copies.

    ARGV[1] options, JSON: { "op": "reserve"|"settle"|"state"|"reset"|"override", "now": ms, "expireAt": unix s
      (of KEYS[2]), "counters": [ { "field", "override" (its field in KEYS[1]), "marker" (3..5),
      "level", "period", "endsAtMs", "limitMicro", "limitTokens" (-1: none; configured) } ] }
      reserve: "needMicro" (-1: unpriced), "needTokens", "leaseMs"
      settle: "bucket", "needMicro", "needTokens" (what was reserved), "micro", "tokens" (used),
        "unpriced" (the model has no price: its tokens also count in "uu"), "noticePercent"; the counters are the reserve's, with the limits and "src" it answered
      override: "override" (a field of KEYS[1]), "value" (its JSON; absent: remove it), "marker" (3..5)

  Output:
    JSON, one shape per op:
    reserve: { "ok": true, "bucket": n, "limits": [ [i, limitMicro, limitTokens, src] ] } (every
      counter's limits in force): reserved on the counters with a limit (the others are not touched);
      { "ok": false, "i": n, "unit", "limit", "used", "first": bool }: counter i holds, nothing reserved
      ("first": this refusal is the first word that it is used up)
    settle: { "events": [ { "i", "kind": "near"|"exhausted", "unit", "limit", "used" } ] }
    state: { "state": [ [um, ut, rm, rt, limitMicro, limitTokens, uu] ] }, one per counter
    reset: { "ok": true }: used amounts and the "said" marks zeroed, reservations kept
    override: { "removed": 0|1 }: the record and the month's copy changed, the subject's marker dropped
    error: invalid arguments, or a stored override or counter of another format version; nothing written

  Reserve, state and reset read the counters and the limits in one HMGET; the month's first call
  copies KEYS[1] into KEYS[2]. A call is let through only if used + reserved + its worst case fits
  in each limit, so no worker overruns a limit unless a provider reports more than the worst case.
  A call that does not fit even with nothing in flight leaves the exhaustion marker, as a limit used
  up does (the next message is answered at once). A reservation whose worker died is dropped when its
  lease's minute ends; a late settle of it releases nothing twice.
]]
--- @include "decode-options"
local BUCKET_MS = 60000
local opts, bad = decodeOptions('budget')
if not opts then return bad end
if type(opts.now) ~= 'number' or type(opts.counters) ~= 'table' or type(opts.expireAt) ~= 'number' then
  return redis.error_reply('ERR budget: needs op, now, expireAt and counters')
end
local op = opts.op
local counters = opts.counters
for _, c in ipairs(counters) do
  if type(c.field) ~= 'string' or type(c.override) ~= 'string' or type(c.marker) ~= 'number' or (c.period ~= 'day' and c.period ~= 'month')
    or type(c.limitMicro) ~= 'number' or type(c.limitTokens) ~= 'number' or type(c.endsAtMs) ~= 'number' then
    return redis.error_reply('ERR budget: a counter needs field, override, marker, level, period, endsAtMs and limits')
  end
end

local function int(x)
  return string.format('%d', x)
end

local function limitsOf(c, stored)
  if not stored then return c.limitMicro, c.limitTokens, 'config' end
  local ok, o = pcall(cjson.decode, stored)
  if not ok or type(o) ~= 'table' or o.v ~= 1 then
    error({ err = 'ERR budget limits of ' .. c.override .. ' are not in format version 1: set them again with chatgate budgets' })
  end
  if o.unlimited == true then return -1, -1, 'override' end
  local usd = o[c.period == 'day' and 'dailyUsd' or 'monthlyUsd']
  local tokens = o[c.period == 'day' and 'dailyTokens' or 'monthlyTokens']
  -- Absent is no limit; anything else but a number ≥ 0 is refused, never read as "no limit".
  for _, v in ipairs({ usd, tokens }) do
    if v ~= nil and (type(v) ~= 'number' or v < 0) then
      error({ err = 'ERR budget limits of ' .. c.override .. ' are unreadable: remove them with chatgate budgets reset, then set them again' })
    end
  end
  return (usd ~= nil and math.floor(usd * 1000000 + 0.5) or -1), (tokens ~= nil and tokens or -1), 'override'
end

-- A counter decoded, its expired reservations dropped and the live ones summed (rm, rt).
local function decodeCounter(c, raw)
  if not raw then return { um = 0, ut = 0, uu = 0, r = {}, s = {}, rm = 0, rt = 0, new = true } end
  local ok, o = pcall(cjson.decode, raw)
  if not ok or type(o) ~= 'table' or o.v ~= 1 then
    error({ err = 'ERR budget counter ' .. c.field .. ' is not in format version 1' })
  end
  local live, rm, rt = {}, 0, 0
  for bucket, amounts in pairs(o.r or {}) do
    if tonumber(bucket) * BUCKET_MS > opts.now then
      live[bucket] = amounts
      rm, rt = rm + amounts[1], rt + amounts[2]
    end
  end
  return { um = o.um or 0, ut = o.ut or 0, uu = o.uu or 0, r = live, s = o.s or {}, rm = rm, rt = rt }
end

local function hmget(key, fields)
  if #fields == 0 then return {} end
  return redis.call('HMGET', key, unpack(fields))
end

-- Writes the counters in one HSET. The month's first call made the hash and set its expiry (the copy below).
local function write(list)
  local args = {}
  for _, item in ipairs(list) do
    local o = item.o
    args[#args + 1] = item.c.field
    args[#args + 1] = cjson.encode({ v = 1, um = o.um, ut = o.ut, uu = o.uu, r = o.r, s = o.s })
  end
  if #args == 0 then return end
  redis.call('HSET', KEYS[2], unpack(args))
end

-- Every marker set or dropped is announced: the gateways keep a copy (src/budget/markers.ts).
local MARKERS = KEYS[1] .. ':markers'

local function mark(c, unit, limit, used, src)
  local marker = cjson.encode({ v = 1, level = c.level, period = c.period, unit = unit, limit = limit, used = used, resetsAtMs = c.endsAtMs, src = src })
  redis.call('SET', KEYS[c.marker], marker, 'PXAT', int(c.endsAtMs))
  redis.call('PUBLISH', MARKERS, cjson.encode({ key = KEYS[c.marker], marker = marker }))
end

if op == 'override' then
  -- An operator's limits changed: the record, this month's copy (when made) and the subject's marker.
  if type(opts.override) ~= 'string' or type(opts.marker) ~= 'number' then return redis.error_reply('ERR budget: override needs override and marker') end
  local removed = 0
  if type(opts.value) == 'string' then redis.call('HSET', KEYS[1], opts.override, opts.value)
  else removed = redis.call('HDEL', KEYS[1], opts.override) end
  if redis.call('HEXISTS', KEYS[2], '$limits') == 1 then
    if type(opts.value) == 'string' then redis.call('HSET', KEYS[2], 'limit:' .. opts.override, opts.value)
    else redis.call('HDEL', KEYS[2], 'limit:' .. opts.override) end
  end
  redis.call('DEL', KEYS[opts.marker])
  redis.call('PUBLISH', MARKERS, cjson.encode({ key = KEYS[opts.marker] }))
  return cjson.encode({ removed = removed })
end

if op == 'settle' then
  if type(opts.bucket) ~= 'number' or type(opts.micro) ~= 'number' or type(opts.tokens) ~= 'number' or type(opts.needMicro) ~= 'number'
    or type(opts.needTokens) ~= 'number' or type(opts.noticePercent) ~= 'number' then
    return redis.error_reply('ERR budget: settle needs bucket, needMicro, needTokens, micro, tokens and noticePercent')
  end
  local fields = {}
  for i, c in ipairs(counters) do fields[i] = c.field end
  local raw = hmget(KEYS[2], fields)
  local list, events = {}, {}
  for i, c in ipairs(counters) do list[i] = { c = c, o = decodeCounter(c, raw[i]) } end
  local key = int(opts.bucket)
  for i, item in ipairs(list) do
    local c, o = item.c, item.o
    local held = o.r[key]
    if held then
      local m, t = math.max(held[1] - opts.needMicro, 0), math.max(held[2] - opts.needTokens, 0)
      if m == 0 and t == 0 then o.r[key] = nil else o.r[key] = { m, t } end
    end
    o.um = o.um + opts.micro
    o.ut = o.ut + opts.tokens
    if opts.unpriced then o.uu = o.uu + opts.tokens end
    local function check(unit, used, limit)
      if limit < 0 then return end
      if used >= limit then
        mark(c, unit, limit, used, c.src or 'config')
        if not o.s['x' .. unit] then
          o.s['x' .. unit] = 1
          table.insert(events, { i = i, kind = 'exhausted', unit = unit, limit = limit, used = used })
        end
      elseif used * 100 >= limit * opts.noticePercent and not o.s['n' .. unit] then
        o.s['n' .. unit] = 1
        table.insert(events, { i = i, kind = 'near', unit = unit, limit = limit, used = used })
      end
    end
    check('usd', o.um, c.limitMicro)
    check('tokens', o.ut, c.limitTokens)
  end
  write(list)
  if #events == 0 then return '{"events":[]}' end
  return cjson.encode({ events = events })
end

-- One read: the counters and this month's copy of the operators' limits ("$limits" says it was made).
local COPIED = '$limits'
local fields, fieldAt = { COPIED }, {}
local function want(field)
  if not fieldAt[field] then
    fields[#fields + 1] = field
    fieldAt[field] = #fields
  end
end
for _, c in ipairs(counters) do
  want('limit:' .. c.override)
  want(c.field)
end
local raw = redis.call('HMGET', KEYS[2], unpack(fields))
local stored = function(c) return raw[fieldAt['limit:' .. c.override]] end
local copy = nil
if not raw[1] then
  -- The month's first call copies the limits (once a month); `chatgate budgets` keeps both in step after.
  local all = redis.call('HGETALL', KEYS[1])
  local byField = {}
  copy = { COPIED, '1' }
  for k = 1, #all, 2 do
    byField[all[k]] = all[k + 1]
    copy[#copy + 1] = 'limit:' .. all[k]
    copy[#copy + 1] = all[k + 1]
  end
  stored = function(c) return byField[c.override] or false end
end
-- Limits first: a stored override this script cannot read fails the call before anything is written.
local list, limits = {}, {}
for i, c in ipairs(counters) do
  c.i = i
  c.lm, c.lt, c.src = limitsOf(c, stored(c))
  limits[i] = { i, c.lm, c.lt, c.src }
  -- A reserve holds nothing on a counter without a limit in force: it does not write it.
  if c.lm >= 0 or c.lt >= 0 or op ~= 'reserve' then list[#list + 1] = { c = c, o = decodeCounter(c, raw[fieldAt[c.field]]) } end
end
if copy then
  redis.call('HSET', KEYS[2], unpack(copy))
  redis.call('EXPIREAT', KEYS[2], int(opts.expireAt))
end

if op == 'state' then
  local state = {}
  for k, item in ipairs(list) do state[k] = { item.o.um, item.o.ut, item.o.rm, item.o.rt, item.c.lm, item.c.lt, item.o.uu } end
  return cjson.encode({ state = state })
end
if op == 'reset' then
  local existing = {}
  for _, item in ipairs(list) do
    if not item.o.new then
      item.o.um, item.o.ut, item.o.uu, item.o.s = 0, 0, 0, {}
      existing[#existing + 1] = item
    end
  end
  write(existing)
  return '{"ok":true}'
end
if op ~= 'reserve' then return redis.error_reply('ERR budget: unknown op ' .. tostring(op)) end
if type(opts.needMicro) ~= 'number' or type(opts.needTokens) ~= 'number' or type(opts.leaseMs) ~= 'number' then
  return redis.error_reply('ERR budget: reserve needs needMicro, needTokens and leaseMs')
end

for _, item in ipairs(list) do
  local c, o = item.c, item.o
  local unit, limit, used, need = nil, nil, 0, 0
  -- A limit reached holds even for a call that needs none of it (a transcription's tokens).
  if c.lm >= 0 and opts.needMicro >= 0 and (o.um + o.rm + opts.needMicro > c.lm or o.um >= c.lm) then unit, limit, used, need = 'usd', c.lm, o.um, opts.needMicro
  elseif c.lt >= 0 and (o.ut + o.rt + opts.needTokens > c.lt or o.ut >= c.lt) then unit, limit, used, need = 'tokens', c.lt, o.ut, opts.needTokens end
  if unit then
    -- No room even with no call in flight: the gateway answers at once until the period ends or the limit changes.
    local first = false
    if used + need > limit or used >= limit then
      mark(c, unit, limit, used, c.src)
      if not o.s['x' .. unit] then
        first = true
        o.s['x' .. unit] = 1
        write({ item })
      end
    end
    return cjson.encode({ ok = false, i = c.i, unit = unit, limit = limit, used = used, first = first })
  end
end
local bucket = math.ceil((opts.now + opts.leaseMs) / BUCKET_MS)
local key = int(bucket)
local micro = math.max(opts.needMicro, 0)
for _, item in ipairs(list) do
  local held = item.o.r[key] or { 0, 0 }
  item.o.r[key] = { held[1] + micro, held[2] + opts.needTokens }
end
write(list)
return cjson.encode({ ok = true, bucket = bucket, limits = limits })
