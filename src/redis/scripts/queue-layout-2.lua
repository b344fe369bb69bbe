--[[
  Claims, renews or checks a process's use of the queue layout: the shard count N recorded for the
  deployment, and the processes that use it, each with an expiry (its heartbeat period). One script,
  so two processes starting at once with different N cannot both pass: the second finds the first
  among the users and is refused.

  Input:
    KEYS[1] the layout (string: the recorded shard count; absent before the first process: counts as 1)
    KEYS[2] the users (sorted set: member `<N>:<process id>` → expiry, ms since epoch, Redis clock)

    ARGV[1] options, JSON: {
              "shards": integer >= 1,      -- the caller's CHATGATE_QUEUE_SHARDS
              "member": string,            -- the caller's process id ('' for a one-off start check)
              "ttlMs": integer > 0,        -- how long the caller counts as a user unless it renews
              "op": "claim" | "renew" | "release",
              "from"?: integer >= 1        -- claim: the recorded count in whose layout the caller found no job waiting
            }

  Output:
    an array, one of:
    {'ok', N}            - the layout is the caller's N (recorded now if it was absent); the caller is a user
    {'check', R}         - claim: R is recorded; the caller must find no job waiting in layout R, then claim with from = R
    {'busy', R, count}   - claim: R is recorded and `count` other live processes use it: nothing written
    {'moved', R}         - renew: another process recorded R since; the caller is no user any more
    {'released', R}      - release: the caller is no user any more
    error - invalid arguments: nothing written
]]
--- @include "options"
local shards = tonumber(opts['shards'])
if not shards or shards < 1 or shards % 1 ~= 0 then return redis.error_reply('ERR queueLayout: shards must be an integer >= 1') end
local ttl = tonumber(opts['ttlMs'])
if not ttl or ttl < 1 or ttl % 1 ~= 0 then return redis.error_reply('ERR queueLayout: ttlMs must be an integer >= 1') end
local member = opts['member']
if type(member) ~= 'string' then return redis.error_reply('ERR queueLayout: member must be a string') end
local op = opts['op']
if op ~= 'claim' and op ~= 'renew' and op ~= 'release' then return redis.error_reply('ERR queueLayout: op must be claim, renew or release') end
local from = opts['from']
if from ~= nil and (type(from) ~= 'number' or from < 1 or from % 1 ~= 0) then return redis.error_reply('ERR queueLayout: from must be an integer >= 1') end

local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local wanted = tostring(shards)
local own = member ~= '' and (wanted .. ':' .. member) or nil
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', nowMs)
local raw = redis.call('GET', KEYS[1])
local recorded = raw or '1'

local function use()
  if raw == false then redis.call('SET', KEYS[1], wanted) end
  if own then redis.call('ZADD', KEYS[2], nowMs + ttl, own) end
  return { 'ok', shards }
end

if op == 'release' then
  if own then redis.call('ZREM', KEYS[2], own) end
  return { 'released', tonumber(recorded) }
end
if recorded == wanted then return use() end
if op == 'renew' then
  -- The record went away (a flushed Redis): the running process records its count again.
  if raw == false then return use() end
  if own then redis.call('ZREM', KEYS[2], own) end
  return { 'moved', tonumber(recorded) }
end

local users = 0
for _, user in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if string.sub(user, 1, #recorded + 1) == recorded .. ':' and user ~= own then users = users + 1 end
end
if users > 0 then return { 'busy', tonumber(recorded), users } end
if from ~= tonumber(recorded) then return { 'check', tonumber(recorded) } end
redis.call('SET', KEYS[1], wanted)
if own then redis.call('ZADD', KEYS[2], nowMs + ttl, own) end
return { 'ok', shards }
