--[[
  Adds usage to a session's ledger and to the usage rollups, outside a session commit: for model
  calls whose work was not committed (a side question; a background compaction dropped because a
  message arrived first, after its summary was paid for). Neither fenced nor versioned: it only
  adds counters, and touches neither the projection nor the meta. Everything is validated before
  the first write.

  Input:
    KEYS[1] usage (hash)
    KEYS[2] usage rollup of the hour (hash, src/usage)
    KEYS[3] usage rollup of the day (hash, src/usage)

    ARGV[1] options, JSON: {
              "usageIncr": { field: integer },   -- usage counters to increment
              "rollup": optional { "format": 1, "fields": { field: integer },   -- counters added to
                          "expireAtMs": [integer, integer] }  -- KEYS[2] and KEYS[3], and their expiry
            }

  Output:
    1
    error - invalid arguments, or a stored counter that is not an integer: nothing written
]]
--- @include "options"
--- @include "usage-ledger"
local function fail(message) return redis.error_reply('ERR addUsage: ' .. message) end

if type(opts['usageIncr']) ~= 'table' then return fail('usageIncr must map fields to integers') end
for field, n in pairs(opts['usageIncr']) do
  if type(field) ~= 'string' or type(n) ~= 'number' or n % 1 ~= 0 then return fail('usageIncr must map fields to integers') end
end
local badRollup = checkRollup(opts['rollup'], fail)
if badRollup then return badRollup end

local rollupKeys = {KEYS[2], KEYS[3]}
local usage, rollupSums, badUsage = readUsage(KEYS[1], opts['usageIncr'], rollupKeys, opts['rollup'], fail)
if not usage then return badUsage end
writeUsage(KEYS[1], usage, rollupKeys, opts['rollup'], rollupSums)
return 1
