/**
 * The commit script: one atomic step per session. KEYS: history, transcript, meta, usage, lease,
 * processing, outbox. ARGV: expectedVersion, fence, mode (replace|append|none), projection tokens
 * (sum for replace, delta for append), transcript retention (0 = unbounded), meta JSON, usage
 * increments JSON, usage sets JSON, finishTurn (1|0), nowMs, #entries, #transcript, #outbox,
 * then the entries, the transcript items (JSON), the outbox items (JSON).
 * Returns {1, newVersion} or {0, reason, current}.
 */
export const COMMIT_SCRIPT = `
local version = tonumber(redis.call('HGET', KEYS[3], 'version') or '0')
if version ~= tonumber(ARGV[1]) then return {0, 'version', tostring(version)} end
local lease = redis.call('GET', KEYS[5])
if lease ~= ARGV[2] then return {0, 'fence', tostring(lease or 'none')} end
local nEntries, nTranscript, nOutbox = tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
local i = 14
if ARGV[3] == 'replace' then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[3], 'projectionTokens', ARGV[4])
elseif ARGV[3] == 'append' then
  redis.call('HINCRBY', KEYS[3], 'projectionTokens', ARGV[4])
end
for _ = 1, nEntries do redis.call('RPUSH', KEYS[1], ARGV[i]); i = i + 1 end
local retention = tonumber(ARGV[5])
for _ = 1, nTranscript do
  local kind = cjson.decode(ARGV[i])['type']
  if retention > 0 then
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', retention, '*', 'type', kind, 'data', ARGV[i])
  else
    redis.call('XADD', KEYS[2], '*', 'type', kind, 'data', ARGV[i])
  end
  i = i + 1
end
for _ = 1, nOutbox do redis.call('RPUSH', KEYS[7], ARGV[i]); i = i + 1 end
for field, value in pairs(cjson.decode(ARGV[6])) do redis.call('HSET', KEYS[3], field, value) end
for field, value in pairs(cjson.decode(ARGV[7])) do redis.call('HINCRBY', KEYS[4], field, value) end
for field, value in pairs(cjson.decode(ARGV[8])) do redis.call('HSET', KEYS[4], field, value) end
if ARGV[9] == '1' then
  redis.call('DEL', KEYS[6])
  redis.call('HSET', KEYS[3], 'turnInboundIds', '[]')
end
redis.call('HSET', KEYS[3], 'lastActivityMs', ARGV[10])
redis.call('HSETNX', KEYS[3], 'createdAtMs', ARGV[10])
return {1, tostring(redis.call('HINCRBY', KEYS[3], 'version', 1))}`;
