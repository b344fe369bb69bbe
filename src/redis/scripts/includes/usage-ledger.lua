--[[
  The usage part of a write: counters added to a session's usage hash (the ledger) and to its
  hourly and daily rollups (usage-rollup).
  readUsage(usageKey, incr, rollupKeys, rollup, fail): the ledger's new value of every field of
    `incr` (stored + increment, as a string), then the rollups' sums (nil when `rollup` is nil);
    or nil, nil and an error reply when a stored counter is not an integer. Writes nothing.
  writeUsage(usageKey, usage, rollupKeys, rollup, sums): writes the ledger's fields in one HSET,
    then the rollups (when `sums`).
]]
--- @include "usage-rollup"
local function readUsage(usageKey, incr, rollupKeys, rollup, fail)
  local fields, usage = {}, {}
  for field in pairs(incr) do fields[#fields + 1] = field end
  if #fields > 0 then
    local values = redis.call('HMGET', usageKey, unpack(fields))
    for k, field in ipairs(fields) do
      local n = tonumber(values[k] or '0')
      if not n or n % 1 ~= 0 then return nil, nil, fail('usage field ' .. field .. ' holds a non-integer') end
      usage[field] = string.format('%d', n + incr[field])
    end
  end
  if not rollup then return usage, nil end
  local sums, err = readRollup(rollupKeys, rollup, fail)
  if not sums then return nil, nil, err end
  return usage, sums
end

local function writeUsage(usageKey, usage, rollupKeys, rollup, sums)
  local flat = {}
  for field, value in pairs(usage) do flat[#flat + 1] = field; flat[#flat + 1] = value end
  if #flat > 0 then redis.call('HSET', usageKey, unpack(flat)) end
  if sums then writeRollup(rollupKeys, rollup, sums) end
end
