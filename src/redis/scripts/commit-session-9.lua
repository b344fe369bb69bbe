--[[
  One atomic change to a session: compare-and-set on the session's version, fenced by the lease.
  Everything is validated before the first write (Redis keeps what a failing script wrote), the
  stored counters too: each hash is read once (HMGET) and written once (one HSET of every field the
  commit changes, the counters with their sums), so a commit runs about ten commands, not thirty.
  Counters stay exact below 2^53.

  Input:
    KEYS[1] history (list of stored entries, the projection)
    KEYS[2] transcript (stream)
    KEYS[3] meta (hash)
    KEYS[4] usage (hash)
    KEYS[5] lease (string: the holder's fencing token)
    KEYS[6] processing (list)
    KEYS[7] outbox (list)
    KEYS[8] usage rollup of the commit's hour (hash, src/usage)
    KEYS[9] usage rollup of the commit's day (hash, src/usage)

    ARGV[1] options, JSON: {
              "expectedVersion": integer,   -- the meta version the change was computed from
              "fence": string,              -- the lease's fencing token
              "mode": "replace" | "append" | "none",   -- what happens to the history
              "projectionTokens": integer,  -- replace: the new sum; append: the delta
              "transcriptRetention": integer >= 0,     -- approximate stream MAXLEN; 0 = unbounded
              "meta": { field: string },    -- meta fields to set
              "usageIncr": { field: integer },         -- usage counters to increment
              "usageSet": { field: string },           -- usage fields to set
              "finishTurn": boolean,        -- the turn's processing list is done with
              "nowMs": integer,             -- lastActivityMs (and createdAtMs the first time)
              "entries": integer, "transcript": integer, "outbox": integer,  -- item counts below
              "rollup": optional { "format": 1, "fields": { field: integer },   -- counters added to
                          "expireAtMs": [integer, integer] }  -- KEYS[8] and KEYS[9], and their expiry
            }
    ARGV[2...] the history entries, then the transcript items (JSON objects with a string
               "type"), then the outbox items — each stored as is

  Output:
    { 1, new version }
    { 0, 'version' | 'fence', what was found } - refused: nothing written
    error - invalid arguments: nothing written
]]
--- @include "fenced-options"
--- @include "usage-ledger"
local function fail(message) return redis.error_reply('ERR commitSession: ' .. message) end
local function isInteger(value) return type(value) == 'number' and value % 1 == 0 end
local function isFieldMap(value, valueOk)
  if type(value) ~= 'table' then return false end
  for field, v in pairs(value) do
    if type(field) ~= 'string' or not valueOk(v) then return false end
  end
  return true
end
local function isScalar(v) return type(v) == 'string' or type(v) == 'number' end
-- A stored counter as a number (absent: 0), or the error of one that is not an integer.
local function stored(value, what)
  local n = tonumber(value or '0')
  if not isInteger(n) then return nil, fail(what .. ' holds a non-integer') end
  return n
end
-- RPUSH of many items in one call, at most 1000 at a time (Lua's unpack has a limit).
local function pushAll(key, from, count)
  for first = from, from + count - 1, 1000 do
    redis.call('RPUSH', key, unpack(ARGV, first, math.min(first + 999, from + count - 1)))
  end
end
local function hsetAll(key, map)
  local flat = {}
  for field, value in pairs(map) do flat[#flat + 1] = field; flat[#flat + 1] = value end
  if #flat > 0 then redis.call('HSET', key, unpack(flat)) end
end

if not isInteger(opts['expectedVersion']) then return fail('expectedVersion must be an integer') end
if opts['mode'] ~= 'replace' and opts['mode'] ~= 'append' and opts['mode'] ~= 'none' then return fail('mode must be replace, append or none') end
if not isInteger(opts['projectionTokens']) then return fail('projectionTokens must be an integer') end
if not isInteger(opts['transcriptRetention']) or opts['transcriptRetention'] < 0 then return fail('transcriptRetention must be an integer >= 0') end
if not isFieldMap(opts['meta'], isScalar) then return fail('meta must map fields to strings') end
if not isFieldMap(opts['usageIncr'], isInteger) then return fail('usageIncr must map fields to integers') end
if not isFieldMap(opts['usageSet'], isScalar) then return fail('usageSet must map fields to strings') end
if type(opts['finishTurn']) ~= 'boolean' then return fail('finishTurn must be a boolean') end
if not isInteger(opts['nowMs']) then return fail('nowMs must be an integer') end
local nEntries, nTranscript, nOutbox = opts['entries'], opts['transcript'], opts['outbox']
if not (isInteger(nEntries) and isInteger(nTranscript) and isInteger(nOutbox)) or nEntries < 0 or nTranscript < 0 or nOutbox < 0 then
  return fail('entries, transcript and outbox must be counts')
end
if #ARGV ~= 1 + nEntries + nTranscript + nOutbox then return fail('expected ' .. (nEntries + nTranscript + nOutbox) .. ' items, got ' .. (#ARGV - 1)) end
local badRollup = checkRollup(opts['rollup'], fail)
if badRollup then return badRollup end
local kinds = {}
for i = 1, nTranscript do
  local decoded, item = pcall(cjson.decode, ARGV[1 + nEntries + i])
  if not decoded or type(item) ~= 'table' or type(item['type']) ~= 'string' then return fail('transcript item ' .. i .. ' has no string type') end
  kinds[i] = item['type']
end

-- Reads first (one per hash), so a malformed stored counter is refused before anything is written.
local now = string.format('%d', opts['nowMs'])
local current = redis.call('HMGET', KEYS[3], 'version', 'projectionTokens', 'createdAtMs')
local version = tonumber(current[1] or '0')
if version ~= opts['expectedVersion'] then return {0, 'version', tostring(version)} end
local held, lease = holdsLease(KEYS[5], opts['fence'])
if not held then return {0, 'fence', tostring(lease or 'none')} end
-- The usage counters: read once, written with their sums in the one HSET of the usage hash
-- (what an HINCRBY each would do; a field both incremented and set ends as set).
local rollupKeys = {KEYS[8], KEYS[9]}
local usage, rollupSums, badUsage = readUsage(KEYS[4], opts['usageIncr'], rollupKeys, opts['rollup'], fail)
if not usage then return badUsage end
for field, value in pairs(opts['usageSet']) do usage[field] = value end
-- Every meta field of the commit, written in one HSET at the end.
local meta = {}
for field, value in pairs(opts['meta']) do meta[field] = value end
if opts['mode'] == 'replace' then
  meta['projectionTokens'] = string.format('%d', opts['projectionTokens'])
elseif opts['mode'] == 'append' then
  local n, err = stored(current[2], 'projectionTokens')
  if not n then return err end
  meta['projectionTokens'] = string.format('%d', n + opts['projectionTokens'])
end
if opts['finishTurn'] then meta['turnInboundIds'] = '[]' end
meta['lastActivityMs'] = now
if not current[3] then meta['createdAtMs'] = now end
meta['version'] = string.format('%d', version + 1)

if opts['mode'] == 'replace' then redis.call('DEL', KEYS[1]) end
pushAll(KEYS[1], 2, nEntries)
local i = 2 + nEntries
local retention = opts['transcriptRetention']
for n = 1, nTranscript do
  if retention > 0 then
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', retention, '*', 'type', kinds[n], 'data', ARGV[i])
  else
    redis.call('XADD', KEYS[2], '*', 'type', kinds[n], 'data', ARGV[i])
  end
  i = i + 1
end
pushAll(KEYS[7], i, nOutbox)
writeUsage(KEYS[4], usage, rollupKeys, opts['rollup'], rollupSums)
if opts['finishTurn'] then redis.call('DEL', KEYS[6]) end
hsetAll(KEYS[3], meta)
return {1, meta['version']}
