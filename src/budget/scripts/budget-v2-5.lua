--[[
  The budget counters: reserve a model call's worst case against every level at once, settle it
  with the provider's usage, read the counters, zero what a subject used, or change an operator's
  limits. Every argument is positional (no JSON on the hot path); amounts are integers.

  Input:
    KEYS[1] limits set by operators (hash: "<level>:<subject>" → JSON { "v": 1, "unlimited": true }
      or { "v": 1, dailyUsd, monthlyUsd, dailyTokens, monthlyTokens }, src/budget/overrides.ts)
    KEYS[2] the counters of one month (hash):
      "<level>:<subject>:<period id>" → a counter, format 2: one line of integers
        "2 <um> <ut> <uu> <said>[ <bucket> <micro> <tokens>]…": used micro-USD and tokens, tokens of
        unpriced calls (in ut only), the notices said (bits: 1 near usd, 2 near tokens, 4 usd used
        up, 8 tokens used up), then what is reserved, by the minute its lease ends;
      "limit2:<level>:<subject>" → this month's copy of KEYS[1]'s field as a line
        "2 <day micro> <day tokens> <month micro> <month tokens>" (-1: none; unlimited: all -1),
        "!v" (another format version) or "!n" (unreadable); "$limits2": the copy was made
    KEYS[3] the user's exhaustion marker (string, JSON { "v": 1, level, period, unit, limit, used,
      resetsAtMs, src: "override"|"config" }, kept until the period ends)
    KEYS[4] the chat's exhaustion marker (the same)
    KEYS[5] the deployment's exhaustion marker (the same)
    A marker set (only when new or changed other than its "used") or dropped is published on
    KEYS[1] .. ':markers' as JSON { key, marker } (no marker: dropped), for the gateways' copies.

    ARGV[1] op, ARGV[2] now (ms), ARGV[3] expireAt (unix s, of KEYS[2]), then by op:
    reserve, state, reset: [4] day id, [5] day ends (ms), [6] month id, [7] month ends (ms),
      [8] need micro-USD (-1: unpriced), [9] need tokens, [10] lease ms (state, reset: 0 0 0),
      then 6 a subject: marker (3..5), "<level>:<subject>", the configured day micro, day tokens,
      month micro, month tokens (-1: none). Counter 2k-1 is subject k's day, 2k its month.
    settle: [4] bucket, [5] reserved micro, [6] reserved tokens, [7] used micro, [8] used tokens,
      [9] unpriced (1: its tokens also count in uu), [10] notice percent, [11] day id, [12] day
      ends, [13] month id, [14] month ends (the reserve's), then 8 a subject of the reserve: marker
      (3..5), "<level>:<subject>", then the reserve's reply for its day and month counters (limit
      micro, limit tokens, src: 1 override) as it came
    override: [4] "<level>:<subject>", [5] marker (3..5), [6] its day counter's field, [7] its
      month counter's field, [8] the new record's JSON (absent: remove it)

  Output (integers; units 1 usd, 2 tokens):
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
      the subject's day and month counters cleared, its marker dropped)
    error: invalid arguments, or a stored override or counter of another format version; nothing written

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
local MARKERS = KEYS[1] .. ':markers'
local op = ARGV[1]
local now = tonumber(ARGV[2])
if not now or not tonumber(ARGV[3]) then return redis.error_reply('ERR budget: needs op, now and expireAt') end

local function int(x)
  return string.format('%d', x)
end

local function has(said, flag)
  return said % (flag * 2) >= flag
end

-- The command that zeroes a counter's field ("<level>:<subject>:<period id>").
local function resetHint(field)
  local level, subject = string.match(field, '^([^:]+):(.*):[^:]+$')
  if level == 'deployment' then return 'chatgate budgets reset deployment --usage' end
  return 'chatgate budgets reset ' .. tostring(level) .. ' ' .. tostring(subject) .. ' --usage'
end

-- A counter read: { um, ut, uu, said, r = { bucket, micro, tokens, … } live only, rm, rt }.
local function readCounter(field, raw)
  if not raw then return { um = 0, ut = 0, uu = 0, said = 0, r = {}, rm = 0, rt = 0 } end
  local um, ut, uu, said, rest = string.match(raw, '^2 (%d+) (%d+) (%d+) (%d+)(.*)$')
  if not um then
    error({ err = 'ERR budget counter ' .. field .. ' is not in format version 2 (an older chatgate wrote it): zero it with ' .. resetHint(field) })
  end
  local r, n, rm, rt = {}, 0, 0, 0
  if rest ~= '' then
    for b, m, t in string.gmatch(rest, ' (%d+) (%d+) (%d+)') do
      b = tonumber(b)
      if b * BUCKET_MS > now then
        m, t = tonumber(m), tonumber(t)
        r[n + 1], r[n + 2], r[n + 3] = b, m, t
        n = n + 3
        rm, rt = rm + m, rt + t
      end
    end
  end
  return { um = tonumber(um), ut = tonumber(ut), uu = tonumber(uu), said = tonumber(said), r = r, rm = rm, rt = rt }
end

-- A counter's line; reservations released to nothing are left out.
local function line(c)
  local text = string.format('2 %d %d %d %d', c.um, c.ut, c.uu, c.said)
  local r = c.r
  for j = 1, #r, 3 do
    if r[j + 1] > 0 or r[j + 2] > 0 then text = text .. string.format(' %d %d %d', r[j], r[j + 1], r[j + 2]) end
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
    elseif k % 2 == 1 then v[k] = math.floor(x * 1000000 + 0.5)
    else v[k] = x end
  end
  return string.format('2 %d %d %d %d', v[1], v[2], v[3], v[4])
end

-- The limits in force of a subject: its copied override line, else the configured ones.
local function limitsOf(override, stored, dm, dt, mm, mt)
  if not stored then return dm, dt, mm, mt, 0 end
  local a, b, c, d = string.match(stored, '^2 (%-?%d+) (%-?%d+) (%-?%d+) (%-?%d+)$')
  if a then return tonumber(a), tonumber(b), tonumber(c), tonumber(d), 1 end
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
local function mark(at, level, period, unit, limit, used, endsAt, src)
  local head = '{"v":1,"level":"' .. level .. '","period":"' .. period .. '","unit":"' .. unit .. '","limit":' .. int(limit)
    .. ',"resetsAtMs":' .. int(endsAt) .. ',"src":"' .. src .. '","used":'
  local held = redis.call('GET', KEYS[at])
  if held and string.sub(held, 1, #head) == head then return end
  local marker = head .. int(used) .. '}'
  redis.call('SET', KEYS[at], marker, 'PXAT', int(endsAt))
  publish(KEYS[at], marker)
end

if op == 'override' then
  -- An operator's limits changed: the record, this month's copy (when made), the notices said, the marker.
  local field, at, dayField, monthField, value = ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7], ARGV[8]
  if not field or not at or not KEYS[at] or not dayField or not monthField then
    return redis.error_reply('ERR budget: override needs the field, marker and the day and month counters')
  end
  local removed = 0
  if value then redis.call('HSET', KEYS[1], field, value) else removed = redis.call('HDEL', KEYS[1], field) end
  local raw = redis.call('HMGET', KEYS[2], COPIED, dayField, monthField)
  if raw[1] then
    if value then redis.call('HSET', KEYS[2], LIMIT .. field, limitsLine(value)) else redis.call('HDEL', KEYS[2], LIMIT .. field) end
  end
  -- With new limits the 80% notice and the used-up alert may come again.
  local out = {}
  for k, counter in ipairs({ dayField, monthField }) do
    local head, said, rest = string.match(raw[k + 1] or '', '^(2 %d+ %d+ %d+) (%d+)(.*)$')
    if head and said ~= '0' then
      out[#out + 1] = counter
      out[#out + 1] = head .. ' 0' .. rest
    end
  end
  if #out > 0 then redis.call('HSET', KEYS[2], unpack(out)) end
  redis.call('DEL', KEYS[at])
  publish(KEYS[at])
  return removed
end

if op == 'settle' then
  local bucket, needMicro, needTokens = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  local micro, tokens, unpriced, noticePercent = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9] == '1', tonumber(ARGV[10])
  local dayId, monthId = ARGV[11], ARGV[13]
  local ends = { tonumber(ARGV[12]), tonumber(ARGV[14]) }
  local n = (#ARGV - 14) / 8
  if not (bucket and needMicro and needTokens and micro and tokens and noticePercent and dayId and monthId and ends[1] and ends[2]) or n ~= math.floor(n) then
    return redis.error_reply('ERR budget: settle needs bucket, reserved and used amounts, unpriced, notice percent, the day and month and 8 arguments a subject')
  end
  local events = {}
  if n == 0 then return events end
  local fields = {}
  for s = 1, n do
    local override = ARGV[8 * s + 8]
    fields[2 * s - 1], fields[2 * s] = override .. ':' .. dayId, override .. ':' .. monthId
  end
  local raw = redis.call('HMGET', KEYS[2], unpack(fields))
  local out = {}
  for i = 1, 2 * n do
    local s = math.floor((i + 1) / 2)
    local isDay = i % 2 == 1
    local at = 8 * s + 7 + (isDay and 2 or 5)
    local field, markerAt, period, endsAt, src = fields[i], tonumber(ARGV[8 * s + 7]), isDay and 'day' or 'month', ends[isDay and 1 or 2], ARGV[at + 2] == '1' and 'override' or 'config'
    local c = readCounter(field, raw[i])
    local r = c.r
    for j = 1, #r, 3 do
      if r[j] == bucket then
        r[j + 1], r[j + 2] = math.max(r[j + 1] - needMicro, 0), math.max(r[j + 2] - needTokens, 0)
      end
    end
    c.um, c.ut = c.um + micro, c.ut + tokens
    if unpriced then c.uu = c.uu + tokens end
    for unit = 1, 2 do
      local used, limit = unit == 1 and c.um or c.ut, tonumber(ARGV[at + unit - 1])
      local out_, near = unit == 1 and OUT_USD or OUT_TOKENS, unit == 1 and NEAR_USD or NEAR_TOKENS
      if limit < 0 then
        -- no limit of this unit
      elseif used >= limit then
        mark(markerAt, string.match(field, '^[^:]+'), period, UNITS[unit], limit, used, endsAt, src)
        if not has(c.said, out_) then
          c.said = c.said + out_
          events[#events + 1], events[#events + 2], events[#events + 3], events[#events + 4], events[#events + 5] = i, 2, unit, limit, used
        end
      elseif used * 100 >= limit * noticePercent and not has(c.said, near) then
        c.said = c.said + near
        events[#events + 1], events[#events + 2], events[#events + 3], events[#events + 4], events[#events + 5] = i, 1, unit, limit, used
      end
    end
    out[2 * i - 1], out[2 * i] = field, line(c)
  end
  redis.call('HSET', KEYS[2], unpack(out))
  return events
end

local dayId, dayEnds, monthId, monthEnds = ARGV[4], tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])
local needMicro, needTokens, leaseMs = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local subjects = (#ARGV - 10) / 6
if not (dayId and dayEnds and monthId and monthEnds and needMicro and needTokens and leaseMs) or subjects ~= math.floor(subjects) then
  return redis.error_reply('ERR budget: ' .. tostring(op) .. ' needs the day and month, the need, the lease and 6 arguments a subject')
end

-- One read: this month's copy of the operators' limits ("$limits2" says it was made) and the counters.
local fields = { COPIED }
for s = 1, subjects do
  local override = ARGV[6 * s + 6]
  fields[3 * s - 1], fields[3 * s], fields[3 * s + 1] = LIMIT .. override, override .. ':' .. dayId, override .. ':' .. monthId
end
local raw = redis.call('HMGET', KEYS[2], unpack(fields))
local copied = nil
if not raw[1] then
  -- The month's first call copies the limits (once a month); `chatgate budgets` keeps both in step after.
  local all = redis.call('HGETALL', KEYS[1])
  copied = {}
  for k = 1, #all, 2 do copied[all[k]] = limitsLine(all[k + 1]) end
end

-- Limits first: a stored override this script cannot read fails the call before anything is written.
-- Counter i = 2s-1 (day), 2s (month): its field, limits in force, source and the period's facts.
local field, lm, lt, src, period, ends, markerAt = {}, {}, {}, {}, {}, {}, {}
for s = 1, subjects do
  local at = 6 * s + 5
  local override = ARGV[at + 1]
  local stored = raw[3 * s - 1]
  if copied then stored = copied[override] end
  local dm, dt, mm, mt, from = limitsOf(override, stored, tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3]), tonumber(ARGV[at + 4]), tonumber(ARGV[at + 5]))
  local d, m = 2 * s - 1, 2 * s
  field[d], field[m] = fields[3 * s], fields[3 * s + 1]
  lm[d], lt[d], lm[m], lt[m] = dm, dt, mm, mt
  src[d], src[m] = from, from
  period[d], period[m] = 'day', 'month'
  ends[d], ends[m] = dayEnds, monthEnds
  markerAt[d], markerAt[m] = tonumber(ARGV[at]), tonumber(ARGV[at])
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
local counters = 2 * subjects
local function rawOf(i)
  return raw[i + math.floor((i + 1) / 2) + 1]
end

if op == 'state' then
  local out = {}
  for i = 1, counters do
    local c = readCounter(field[i], rawOf(i))
    local at = 7 * (i - 1)
    out[at + 1], out[at + 2], out[at + 3], out[at + 4], out[at + 5], out[at + 6], out[at + 7] = c.um, c.ut, c.rm, c.rt, lm[i], lt[i], c.uu
  end
  return out
end
if op == 'reset' then
  local out = {}
  for i = 1, counters do
    local text = rawOf(i)
    if text then
      local ok, c = pcall(readCounter, field[i], text)
      -- An unreadable counter (another format version) starts again at 0, its reservations with it.
      if not ok then c = { r = {} } end
      c.um, c.ut, c.uu, c.said = 0, 0, 0, 0
      out[#out + 1] = field[i]
      out[#out + 1] = line(c)
    end
  end
  if #out > 0 then redis.call('HSET', KEYS[2], unpack(out)) end
  return 1
end
if op ~= 'reserve' then return redis.error_reply('ERR budget: unknown op ' .. tostring(op)) end

-- Only counters with a limit in force are read and reserved on.
local held = {}
for i = 1, counters do
  if lm[i] >= 0 or lt[i] >= 0 then
    local c = readCounter(field[i], rawOf(i))
    local unit, limit, used, need = nil, nil, 0, 0
    -- A limit reached holds even for a call that needs none of it (a transcription's tokens).
    if lm[i] >= 0 and needMicro >= 0 and (c.um + c.rm + needMicro > lm[i] or c.um >= lm[i]) then unit, limit, used, need = 1, lm[i], c.um, needMicro
    elseif lt[i] >= 0 and (c.ut + c.rt + needTokens > lt[i] or c.ut >= lt[i]) then unit, limit, used, need = 2, lt[i], c.ut, needTokens end
    if unit then
      local first, inFlight = 0, 1
      -- No room even with no call in flight: the gateway answers at once until the period ends or the limit changes.
      if used + need > limit or used >= limit then
        inFlight = 0
        mark(markerAt[i], string.match(field[i], '^[^:]+'), period[i], UNITS[unit], limit, used, ends[i], src[i] == 1 and 'override' or 'config')
        local flag = unit == 1 and OUT_USD or OUT_TOKENS
        if not has(c.said, flag) then
          first = 1
          c.said = c.said + flag
          redis.call('HSET', KEYS[2], field[i], line(c))
        end
      end
      return { 0, i, unit, limit, used, first, inFlight }
    end
    held[#held + 1] = i
    held[#held + 1] = c
  end
end
local bucket = math.ceil((now + leaseMs) / BUCKET_MS)
local micro = math.max(needMicro, 0)
local out, reply = {}, { 1, bucket }
for k = 1, #held, 2 do
  local i, c = held[k], held[k + 1]
  local r, found = c.r, false
  for j = 1, #r, 3 do
    if r[j] == bucket then
      r[j + 1], r[j + 2], found = r[j + 1] + micro, r[j + 2] + needTokens, true
    end
  end
  if not found then r[#r + 1], r[#r + 2], r[#r + 3] = bucket, micro, needTokens end
  out[k], out[k + 1] = field[i], line(c)
end
if #out > 0 then redis.call('HSET', KEYS[2], unpack(out)) end
for i = 1, counters do
  reply[3 * i], reply[3 * i + 1], reply[3 * i + 2] = lm[i], lt[i], src[i]
end
return reply
