--[[
  The budget counters: reserve a model call's worst case against every level at once, settle it
  with the provider's usage, read the counters, zero what a subject used, or change an operator's
  limits. Every argument is positional (no JSON on the hot path); amounts are integers.

  Input:
    KEYS[1] limits set by operators (hash: "<level>:<subject>" → JSON { "v": 1, "unlimited": true }
      or { "v": 1, dailyUsd, monthlyUsd, dailyTokens, monthlyTokens }, src/budget/overrides.ts)
    KEYS[2] the counters of one month (hash):
      "<level>:<subject>" → its day and month counters, format 2: integers packed as
        little-endian doubles (struct "<d"): 2 (the format), the day the day's part counts (its
        id's digits, 20261202; another day's part reads as 0), then of the day and of the month
        used micro-USD, used tokens, tokens of unpriced calls (in the used tokens only) and the
        notices said (bits: 1 near usd, 2 near tokens, 4 usd used up, 8 tokens used up), then
        bucket, micro, tokens a reservation: what the subject's calls in flight hold, by the
        minute their leases end (against both periods);
      "limit2:<level>:<subject>" → this month's copy of KEYS[1]'s field as a line
        "2 <day micro> <day tokens> <month micro> <month tokens>" (-1: none; unlimited: all -1),
        "!v" (another format version) or "!n" (unreadable); "$limits2": the copy was made
    KEYS[3] the user's exhaustion marker (string, JSON { "v": 1, level, period, unit, limit, used,
      resetsAtMs, src: "override"|"config" }, kept until the period ends)
    KEYS[4] the chat's exhaustion marker (the same)
    KEYS[5] the deployment's exhaustion marker (the same)
    A marker set (only when new or changed other than its "used") or dropped is published on the
    channel KEYS[1] .. ':markers' as JSON { key, marker } (no marker: dropped), for the gateways' copies.

    ARGV[1] op, ARGV[2] now (ms), ARGV[3] expireAt (unix s, of KEYS[2]), then by op:
    reserve, state, reset: ARGV[4] day id, ARGV[5] day ends (ms), ARGV[6] month id, ARGV[7] month
      ends (ms), ARGV[8] need micro-USD (-1: unpriced), ARGV[9] need tokens, ARGV[10] lease ms
      (state, reset: 0 0 0), then 6 a subject: marker (3..5), "<level>:<subject>", the configured
      day micro, day tokens, month micro, month tokens (-1: none). Counter 2k-1 is subject k's
      day, 2k its month.
    settle: ARGV[4] bucket, ARGV[5] reserved micro, ARGV[6] reserved tokens, ARGV[7] used micro,
      ARGV[8] used tokens, ARGV[9] unpriced (1: its tokens also count in uu), ARGV[10] notice
      percent, ARGV[11] day id, ARGV[12] day ends, ARGV[13] month id, ARGV[14] month ends (the
      reserve's: a day's part of a later day is left), then 8 a subject of the reserve: marker
      (3..5), "<level>:<subject>", then the reserve's reply for its day and month (limit micro,
      limit tokens, src: 1 override) as it came
    override: ARGV[4] "<level>:<subject>", ARGV[5] marker (3..5), ARGV[6] the new record's JSON
      (absent: remove it)

  Output:
    Integers; a unit is 1 (usd) or 2 (tokens).
    reserve: { 1, bucket, then 3 a counter: limit micro, limit tokens (in force; -1: none), src
      (1 override, 0 config) }: reserved on the counters with a limit (the others are not read);
      the settle counts the use on every counter. Or { 0, i, unit, limit, used, first, inFlight }:
      counter i holds, nothing reserved. first 1: this refusal is the first word that it is used
      up. inFlight 1: it fits with nothing in flight (no marker is left then).
    settle: 5 an event: i (counter, as in reserve), kind (1 near, 2 used up), unit, limit, used
    state: 7 a counter: um, ut, rm, rt, limit micro, limit tokens, uu
    reset: 1 (used amounts and the notices said zeroed, reservations kept; an unreadable counter
      starts again at 0)
    override: 1 when a record was removed, else 0 (the month's copy changed, the notices said of
      the subject's day and month cleared, its marker dropped)
    error: invalid arguments, or a stored override or counter of another format version (a month
      an older chatgate counted in: until a reset drops its format 1 fields); nothing written

  Reserve, state and reset read the counters and the limits in one HMGET; the month's first call
  copies KEYS[1] into KEYS[2] (in chunks). A call is let through only if used + reserved + its
  worst case fits in each limit, so no worker overruns a limit unless a provider reports more than
  the worst case. A call that does not fit even with nothing in flight leaves the exhaustion
  marker, as a limit used up does (the next message is answered at once). A reservation whose
  worker died is dropped when its lease's minute ends; a late settle of it releases nothing twice.
]]
local BUCKET_MS = 60000
local COPIED = '$limits2'
local LIMIT = 'limit2:'
local NEAR_USD, NEAR_TOKENS, OUT_USD, OUT_TOKENS = 1, 2, 4, 8
local UNITS = { 'usd', 'tokens' }
local PERIODS = { 'day', 'month' }
local MARKERS = KEYS[1] .. ':markers'
-- Locals: a global's lookup costs more in Redis's Lua. Numbers from strings by `+ 0` (faster than tonumber).
local match, format, sub = string.match, string.format, string.sub
local tonumber, floor = tonumber, math.floor
-- Counters are packed doubles (little-endian): struct's pack and unpack cost a fraction of text's.
local HEAD, TRIPLE, HEAD_BYTES, TRIPLE_BYTES = '<dddddddddd', '<ddd', 80, 24
local packBytes, unpackBytes = struct.pack, struct.unpack
local op = ARGV[1]
local now = tonumber(ARGV[2])
if not now or not tonumber(ARGV[3]) then return redis.error_reply('ERR budget: needs op, now and expireAt') end

local function int(x)
  return format('%d', x)
end

local function has(said, flag)
  return said % (flag * 2) >= flag
end

-- The command that zeroes a subject's counters ("<level>:<subject>").
local function resetHint(field)
  local level, subject = match(field, '^([^:]+):(.*)$')
  if level == 'deployment' then return 'chatgate budgets reset deployment --usage' end
  return 'chatgate budgets reset ' .. tostring(level) .. ' ' .. tostring(subject) .. ' --usage'
end

-- A subject's counters read for day `day` (a number): { day, um, ut, uu, said (day), um, ut, uu,
-- said (month) } at 1..9, r = { bucket, micro, tokens, … } (live only), rm, rt.
local function readCounters(field, raw, day)
  if not raw then return { day, 0, 0, 0, 0, 0, 0, 0, 0, r = {}, rm = 0, rt = 0 } end
  local size = #raw
  local v, d, a, b, c, e, f, g, h, i, at = 0
  if size >= HEAD_BYTES and (size - HEAD_BYTES) % TRIPLE_BYTES == 0 then v, d, a, b, c, e, f, g, h, i, at = unpackBytes(HEAD, raw) end
  if v ~= 2 then
    error({ err = 'ERR budget counters ' .. field .. ' are not in format version 2 (an older chatgate wrote them): zero them with ' .. resetHint(field) })
  end
  local o
  if d == day then o = { day, a, b, c, e, f, g, h, i }
  else o = { d, 0, 0, 0, 0, f, g, h, i, old = { a, b, c, e } } end
  local r, n, rm, rt = {}, 0, 0, 0
  while at <= size do
    local bk, m, t
    bk, m, t, at = unpackBytes(TRIPLE, raw, at)
    if bk * BUCKET_MS > now then
      r[n + 1], r[n + 2], r[n + 3] = bk, m, t
      n = n + 3
      rm, rt = rm + m, rt + t
    end
  end
  o.r, o.rm, o.rt = r, rm, rt
  return o
end

-- The stored counters of a subject; reservations released to nothing are left out.
local function line(o)
  local day = o.old
  local text
  if day then text = packBytes(HEAD, 2, o[1], day[1], day[2], day[3], day[4], o[6], o[7], o[8], o[9])
  else text = packBytes(HEAD, 2, o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9]) end
  local r = o.r
  for j = 1, #r, 3 do
    if r[j + 1] > 0 or r[j + 2] > 0 then text = text .. packBytes(TRIPLE, r[j], r[j + 1], r[j + 2]) end
  end
  return text
end

-- A stored override (JSON, version 1) as the month's copy holds it: a line, "!v" or "!n".
local LIMIT_NAMES = { 'dailyUsd', 'dailyTokens', 'monthlyUsd', 'monthlyTokens' }
local function limitsLine(json)
  local ok, o = pcall(cjson.decode, json)
  if not ok or type(o) ~= 'table' or o.v ~= 1 then return '!v' end
  if o.unlimited == true then return '2 -1 -1 -1 -1' end
  local v = {}
  for k, name in ipairs(LIMIT_NAMES) do
    local x = o[name]
    -- Absent is no limit; anything else but a number ≥ 0 is refused, never read as "no limit".
    if x == nil then v[k] = -1
    elseif type(x) ~= 'number' or x < 0 then return '!n'
    elseif k % 2 == 1 then v[k] = floor(x * 1000000 + 0.5)
    else v[k] = x end
  end
  return format('2 %d %d %d %d', v[1], v[2], v[3], v[4])
end

-- The limits in force of a subject, { day micro, day tokens, month micro, month tokens, src (1 override) }:
-- its copied override line, else the configured ones (ARGV from `at`).
local function limitsOf(override, stored, at)
  if not stored then return { ARGV[at] + 0, ARGV[at + 1] + 0, ARGV[at + 2] + 0, ARGV[at + 3] + 0, 0 } end
  local a, b, c, d = match(stored, '^2 (%-?%d+) (%-?%d+) (%-?%d+) (%-?%d+)$')
  if a then return { a + 0, b + 0, c + 0, d + 0, 1 } end
  if stored == '!n' then
    error({ err = 'ERR budget limits of ' .. override .. ' are unreadable: remove them with chatgate budgets reset, then set them again' })
  end
  error({ err = 'ERR budget limits of ' .. override .. ' are not in format version 1: set them again with chatgate budgets' })
end

local function publish(key, marker)
  local body = '{"key":' .. cjson.encode(key)
  if marker then body = body .. ',"marker":' .. cjson.encode(marker) end
  redis.call('PUBLISH', MARKERS, body .. '}')
end

-- Sets the marker of KEYS[at] unless the same one (but for "used") holds; announced.
local function mark(at, override, period, unit, limit, used, endsAt, src)
  local head = '{"v":1,"level":"' .. match(override, '^[^:]+') .. '","period":"' .. period .. '","unit":"' .. unit .. '","limit":' .. int(limit)
    .. ',"resetsAtMs":' .. int(endsAt) .. ',"src":"' .. src .. '","used":'
  local held = redis.call('GET', KEYS[at])
  if held and sub(held, 1, #head) == head then return end
  local marker = head .. int(used) .. '}'
  redis.call('SET', KEYS[at], marker, 'PXAT', int(endsAt))
  publish(KEYS[at], marker)
end

if op == 'override' then
  -- An operator's limits changed: the record, this month's copy (when made), the notices said, the marker.
  local field, at, value = ARGV[4], tonumber(ARGV[5]), ARGV[6]
  if not field or not at or not KEYS[at] then return redis.error_reply('ERR budget: override needs the field and the marker') end
  local removed = 0
  if value then redis.call('HSET', KEYS[1], field, value) else removed = redis.call('HDEL', KEYS[1], field) end
  local raw = redis.call('HMGET', KEYS[2], COPIED, field)
  if raw[1] then
    if value then redis.call('HSET', KEYS[2], LIMIT .. field, limitsLine(value)) else redis.call('HDEL', KEYS[2], LIMIT .. field) end
  end
  -- With new limits the 80% notice and the used-up alert may come again.
  if raw[2] then
    local ok, o = pcall(readCounters, field, raw[2], -1)
    if ok and (o[5] ~= 0 or o[9] ~= 0 or (o.old and o.old[4] ~= 0)) then
      o[5], o[9] = 0, 0
      if o.old then o.old[4] = 0 end
      -- Expired reservations go with the rewrite, as on any write.
      redis.call('HSET', KEYS[2], field, line(o))
    end
  end
  redis.call('DEL', KEYS[at])
  publish(KEYS[at])
  return removed
end

-- The day a call counts in: its id's digits as a number (2026-12-02: 20261202).
local function dayOf(id)
  return (string.gsub(id, '%-', '')) + 0
end

if op == 'settle' then
  local bucket, needMicro, needTokens = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  local micro, tokens, unpriced, noticePercent = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9] == '1', tonumber(ARGV[10])
  local dayEnds, monthEnds = tonumber(ARGV[12]), tonumber(ARGV[14])
  local n = (#ARGV - 14) / 8
  if not (bucket and needMicro and needTokens and micro and tokens and noticePercent and ARGV[11] and dayEnds and monthEnds) or n ~= floor(n) then
    return redis.error_reply('ERR budget: settle needs bucket, reserved and used amounts, unpriced, notice percent, the day and month and 8 arguments a subject')
  end
  local day = dayOf(ARGV[11])
  local events = {}
  if n == 0 then return events end
  local fields = {}
  for s = 1, n do fields[s] = ARGV[8 * s + 8] end
  local raw = redis.call('HMGET', KEYS[2], unpack(fields))
  local out = {}
  for s = 1, n do
    local field, markerAt = fields[s], ARGV[8 * s + 7] + 0
    local o = readCounters(field, raw[s], day)
    if o[1] < day then
      -- The line's day ended before this call's: the day's part starts again for this call's day.
      o[1], o[2], o[3], o[4], o[5], o.old = day, 0, 0, 0, 0, nil
    end
    local r = o.r
    for j = 1, #r, 3 do
      if r[j] == bucket then
        r[j + 1], r[j + 2] = r[j + 1] - needMicro, r[j + 2] - needTokens
        if r[j + 1] < 0 then r[j + 1] = 0 end
        if r[j + 2] < 0 then r[j + 2] = 0 end
      end
    end
    -- Periods: 1 the day (at 2..5; a day after this call's has no part of it), 2 the month (at 6..9).
    for p = 1, 2 do
      if p == 2 or not o.old then
        local at = p == 1 and 2 or 6
        o[at], o[at + 1] = o[at] + micro, o[at + 1] + tokens
        if unpriced then o[at + 2] = o[at + 2] + tokens end
        local i = 2 * s - 2 + p
        local limits = 8 * s + 6 + 3 * p
        local src = ARGV[limits + 2] == '1' and 'override' or 'config'
        for unit = 1, 2 do
          local used, limit = o[at + unit - 1], ARGV[limits + unit - 1] + 0
          local out_, near = unit == 1 and OUT_USD or OUT_TOKENS, unit == 1 and NEAR_USD or NEAR_TOKENS
          if limit < 0 then
            -- no limit of this unit
          elseif used >= limit then
            mark(markerAt, field, PERIODS[p], UNITS[unit], limit, used, p == 1 and dayEnds or monthEnds, src)
            if not has(o[at + 3], out_) then
              o[at + 3] = o[at + 3] + out_
              events[#events + 1], events[#events + 2], events[#events + 3], events[#events + 4], events[#events + 5] = i, 2, unit, limit, used
            end
          elseif used * 100 >= limit * noticePercent and not has(o[at + 3], near) then
            o[at + 3] = o[at + 3] + near
            events[#events + 1], events[#events + 2], events[#events + 3], events[#events + 4], events[#events + 5] = i, 1, unit, limit, used
          end
        end
      end
    end
    out[2 * s - 1], out[2 * s] = field, line(o)
  end
  redis.call('HSET', KEYS[2], unpack(out))
  return events
end

local dayEnds, monthEnds = tonumber(ARGV[5]), tonumber(ARGV[7])
local needMicro, needTokens, leaseMs = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local subjects = (#ARGV - 10) / 6
if not (ARGV[4] and dayEnds and ARGV[6] and monthEnds and needMicro and needTokens and leaseMs) or subjects ~= floor(subjects) then
  return redis.error_reply('ERR budget: ' .. tostring(op) .. ' needs the day and month, the need, the lease and 6 arguments a subject')
end
local day = dayOf(ARGV[4])

-- One read: this month's copy of the operators' limits ("$limits2" says it was made) and the counters.
local fields = { COPIED }
for s = 1, subjects do
  local override = ARGV[6 * s + 6]
  fields[2 * s], fields[2 * s + 1] = LIMIT .. override, override
end
local raw = redis.call('HMGET', KEYS[2], unpack(fields))
local copied = nil
if not raw[1] then
  -- A month an older chatgate counted in (format 1: "$limits" and JSON counters) is refused until
  -- `chatgate budgets reset … --usage` drops what it wrote: its use so far is not read.
  if redis.call('HEXISTS', KEYS[2], '$limits') == 1 then
    if op ~= 'reset' then
      error({ err = 'ERR budget counters of this month are in format version 1 (an older chatgate wrote them): zero them with chatgate budgets reset deployment --usage (this month\'s use so far starts again at 0)' })
    end
    local all, old = redis.call('HGETALL', KEYS[2]), {}
    for k = 1, #all, 2 do
      if all[k] == '$limits' or sub(all[k], 1, 6) == 'limit:' or sub(all[k + 1], 1, 1) == '{' then old[#old + 1] = all[k] end
      if #old >= 500 then
        redis.call('HDEL', KEYS[2], unpack(old))
        old = {}
      end
    end
    if #old > 0 then redis.call('HDEL', KEYS[2], unpack(old)) end
  end
  -- The month's first call copies the limits (once a month); `chatgate budgets` keeps both in step after.
  local all = redis.call('HGETALL', KEYS[1])
  copied = {}
  for k = 1, #all, 2 do copied[all[k]] = limitsLine(all[k + 1]) end
end

-- Limits first: a stored override this script cannot read fails the call before anything is written.
local limits = {}
for s = 1, subjects do
  local override = fields[2 * s + 1]
  local stored = raw[2 * s]
  if copied then stored = copied[override] end
  limits[s] = limitsOf(override, stored, 6 * s + 7)
end
if copied then
  -- In chunks: unpack takes a few thousand values at most.
  local chunk = { COPIED, '2' }
  for override, text in pairs(copied) do
    chunk[#chunk + 1] = LIMIT .. override
    chunk[#chunk + 1] = text
    if #chunk >= 1000 then
      redis.call('HSET', KEYS[2], unpack(chunk))
      chunk = {}
    end
  end
  if #chunk > 0 then redis.call('HSET', KEYS[2], unpack(chunk)) end
  redis.call('EXPIREAT', KEYS[2], ARGV[3])
end

if op == 'state' then
  local out = {}
  for s = 1, subjects do
    local o, l = readCounters(fields[2 * s + 1], raw[2 * s + 1], day), limits[s]
    local at = 14 * (s - 1)
    if o.old then o[2], o[3], o[4] = 0, 0, 0 end
    out[at + 1], out[at + 2], out[at + 3], out[at + 4], out[at + 5], out[at + 6], out[at + 7] = o[2], o[3], o.rm, o.rt, l[1], l[2], o[4]
    out[at + 8], out[at + 9], out[at + 10], out[at + 11], out[at + 12], out[at + 13], out[at + 14] = o[6], o[7], o.rm, o.rt, l[3], l[4], o[8]
  end
  return out
end
if op == 'reset' then
  local out = {}
  for s = 1, subjects do
    local text = raw[2 * s + 1]
    if text then
      local ok, o = pcall(readCounters, fields[2 * s + 1], text, day)
      -- Unreadable counters (another format version) start again at 0, their reservations with them.
      if not ok then o = { r = {} } end
      o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9], o.old = day, 0, 0, 0, 0, 0, 0, 0, 0, nil
      out[#out + 1] = fields[2 * s + 1]
      out[#out + 1] = line(o)
    end
  end
  if #out > 0 then redis.call('HSET', KEYS[2], unpack(out)) end
  return 1
end
if op ~= 'reserve' then return redis.error_reply('ERR budget: unknown op ' .. tostring(op)) end

-- Only subjects with a limit in force are read and reserved on; the day's part of another day counts 0.
local out = {}
local bucket = math.ceil((now + leaseMs) / BUCKET_MS)
local micro = needMicro > 0 and needMicro or 0
for s = 1, subjects do
  local l = limits[s]
  if l[1] >= 0 or l[2] >= 0 or l[3] >= 0 or l[4] >= 0 then
    local field = fields[2 * s + 1]
    local o = readCounters(field, raw[2 * s + 1], day)
    if o.old then o[1], o[2], o[3], o[4], o[5], o.old = day, 0, 0, 0, 0, nil end
    for p = 1, 2 do
      local at, lm, lt = p == 1 and 2 or 6, l[2 * p - 1], l[2 * p]
      local um, ut = o[at], o[at + 1]
      local unit, limit, used, need = nil, nil, 0, 0
      -- A limit reached holds even for a call that needs none of it (a transcription's tokens).
      if lm >= 0 and needMicro >= 0 and (um + o.rm + needMicro > lm or um >= lm) then unit, limit, used, need = 1, lm, um, needMicro
      elseif lt >= 0 and (ut + o.rt + needTokens > lt or ut >= lt) then unit, limit, used, need = 2, lt, ut, needTokens end
      if unit then
        local first, inFlight = 0, 1
        -- No room even with no call in flight: the gateway answers at once until the period ends or the limit changes.
        if used + need > limit or used >= limit then
          inFlight = 0
          mark(ARGV[6 * s + 5] + 0, field, PERIODS[p], UNITS[unit], limit, used, p == 1 and dayEnds or monthEnds, l[5] == 1 and 'override' or 'config')
          local flag = unit == 1 and OUT_USD or OUT_TOKENS
          if not has(o[at + 3], flag) then
            first = 1
            o[at + 3] = o[at + 3] + flag
            redis.call('HSET', KEYS[2], field, line(o))
          end
        end
        return { 0, 2 * s - 2 + p, unit, limit, used, first, inFlight }
      end
    end
    local r, found = o.r, false
    for j = 1, #r, 3 do
      if r[j] == bucket then
        r[j + 1], r[j + 2], found = r[j + 1] + micro, r[j + 2] + needTokens, true
      end
    end
    if not found then r[#r + 1], r[#r + 2], r[#r + 3] = bucket, micro, needTokens end
    out[#out + 1] = field
    out[#out + 1] = line(o)
  end
end
if #out > 0 then redis.call('HSET', KEYS[2], unpack(out)) end
local reply = { 1, bucket }
for s = 1, subjects do
  local l, at = limits[s], 6 * s - 3
  reply[at], reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4], reply[at + 5] = l[1], l[2], l[5], l[3], l[4], l[5]
end
return reply
