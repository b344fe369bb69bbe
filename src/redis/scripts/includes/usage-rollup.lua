--[[
  The usage rollups' part of a session commit (src/usage/rollup-format.ts, format 1): the commit
  adds its counters to the session's hourly and daily rollup hashes, in its own hash slot, so a
  turn's figures enter the rollups exactly when they enter the ledger.
  checkRollup(rollup, fail): nil when `rollup` (the "rollup" option) is absent or valid, else an
    error reply. Valid: { "format": 1, "fields": { field: integer }, "expireAtMs": [hour, day] }.
  readRollup(keys, rollup, fail): the new value of every field (stored + increment) per key, or nil
    and an error reply when a hash holds another format or a non-integer counter. Writes nothing.
  writeRollup(keys, rollup, sums): writes the sums and the format, and the expiry of each key the
    commit creates. A hash's expiry depends only on its bucket (its end plus the retention), so the
    commit that creates it sets it once; later commits of the bucket leave it (two commands fewer).
]]
local ROLLUP_FORMAT = 1
local function checkRollup(rollup, fail)
  if rollup == nil then return nil end
  if type(rollup) ~= 'table' or rollup['format'] ~= ROLLUP_FORMAT then return fail('rollup.format must be ' .. ROLLUP_FORMAT) end
  if type(rollup['fields']) ~= 'table' then return fail('rollup.fields must map fields to integers') end
  for field, n in pairs(rollup['fields']) do
    if type(field) ~= 'string' or type(n) ~= 'number' or n % 1 ~= 0 then return fail('rollup.fields must map fields to integers') end
  end
  local at = rollup['expireAtMs']
  if type(at) ~= 'table' or #at ~= 2 or type(at[1]) ~= 'number' or type(at[2]) ~= 'number' then return fail('rollup.expireAtMs must be two times in ms') end
  return nil
end

local function readRollup(keys, rollup, fail)
  local names = {'format'}
  for field in pairs(rollup['fields']) do names[#names + 1] = field end
  local sums = {}
  for k, key in ipairs(keys) do
    local values = redis.call('HMGET', key, unpack(names))
    if values[1] and values[1] ~= tostring(ROLLUP_FORMAT) then return nil, fail('the rollup ' .. key .. ' has format ' .. values[1] .. '; this chatgate writes ' .. ROLLUP_FORMAT) end
    -- `created`: no format yet, so the hash does not exist (every write sets the format).
    local flat = {'format', tostring(ROLLUP_FORMAT), created = not values[1]}
    for i = 2, #names do
      local n = tonumber(values[i] or '0')
      if not n or n % 1 ~= 0 then return nil, fail('the rollup ' .. key .. ' field ' .. names[i] .. ' holds a non-integer') end
      flat[#flat + 1] = names[i]
      flat[#flat + 1] = string.format('%d', n + rollup['fields'][names[i]])
    end
    sums[k] = flat
  end
  return sums
end

local function writeRollup(keys, rollup, sums)
  for k, key in ipairs(keys) do
    redis.call('HSET', key, unpack(sums[k]))
    if sums[k].created then redis.call('PEXPIREAT', key, string.format('%d', rollup['expireAtMs'][k])) end
  end
end
