--[[
  Decides one asked tool call, once: a pending approval becomes approved, denied or expired, its
  version goes up by one, the decision joins the transcript and, for "Always in this chat", the
  tool is granted for the session — all or nothing. A decision on an approval that is no longer
  pending changes nothing (a button pressed twice, on two gateways). An approval past its expiry is
  expired whatever was asked; `expired` is refused before the expiry.

  Input:
    KEYS[1] the session's approvals (hash: approval id -> record JSON, format version 1)
    KEYS[2] the session's grants (hash: tool name -> grant JSON)
    KEYS[3] the session's transcript (stream)

    ARGV[1] options, JSON: {
              "id": string,
              "decision": "approved" | "denied" | "expired",
              "via": "user" | "timeout" | "stop" | "reset",
              "by": { "userId": string, "userName": string } | absent,
              "always": boolean,                     -- with "approved": grant the tool for the session
              "nowMs": integer,
              "transcriptRetention": integer >= 0    -- approximate stream MAXLEN; 0 = unbounded
            }

  Output:
    { "applied", <record JSON> }    - decided now
    { "decided", <record JSON> }    - already decided before (nothing written)
    { "not-due", <record JSON> }    - "expired" asked before the expiry (nothing written)
    { "unknown", "" }               - no such approval (nothing written)
    error                           - invalid arguments, or a record of another format version (nothing written)
]]
local function fail(message) return redis.error_reply('ERR decideApproval: ' .. message) end
local ok, o = pcall(cjson.decode, ARGV[1])
if not ok or type(o) ~= 'table' then return fail('options must be a JSON object') end
if type(o['id']) ~= 'string' or o['id'] == '' then return fail('id must be a non-empty string') end
local decisions = { approved = true, denied = true, expired = true }
if not decisions[o['decision']] then return fail('decision must be approved, denied or expired') end
local vias = { user = true, timeout = true, stop = true, reset = true }
if not vias[o['via']] then return fail('via must be user, timeout, stop or reset') end
if type(o['nowMs']) ~= 'number' or o['nowMs'] % 1 ~= 0 then return fail('nowMs must be an integer') end
if type(o['transcriptRetention']) ~= 'number' or o['transcriptRetention'] < 0 then return fail('transcriptRetention must be an integer >= 0') end
local by = o['by']
if by ~= nil and (type(by) ~= 'table' or type(by['userId']) ~= 'string' or type(by['userName']) ~= 'string') then return fail('by must hold string userId and userName') end

local raw = redis.call('HGET', KEYS[1], o['id'])
if not raw then return { 'unknown', '' } end
local decoded, record = pcall(cjson.decode, raw)
if not decoded or type(record) ~= 'table' then return fail('approval ' .. o['id'] .. ' is not valid JSON') end
if record['v'] ~= 1 then return fail('approval ' .. o['id'] .. ' has format version ' .. tostring(record['v']) .. '; this chatgate reads version 1') end
if type(record['version']) ~= 'number' or type(record['expiresAtMs']) ~= 'number' or type(record['tool']) ~= 'string' then return fail('approval ' .. o['id'] .. ' lacks version, expiresAtMs or tool') end
if record['state'] ~= 'pending' then return { 'decided', raw } end

local decision = o['decision']
local via = o['via']
if o['nowMs'] >= record['expiresAtMs'] then
  decision, via, by = 'expired', 'timeout', nil
elseif decision == 'expired' then
  return { 'not-due', raw }
end

record['state'] = decision
record['version'] = record['version'] + 1
record['decidedVia'] = via
record['decidedAtMs'] = o['nowMs']
if by ~= nil then record['decidedBy'] = { userId = by['userId'], userName = by['userName'] } end
local always = decision == 'approved' and o['always'] == true
if always then record['always'] = true end
local encoded = cjson.encode(record)
redis.call('HSET', KEYS[1], o['id'], encoded)
if always then
  redis.call('HSET', KEYS[2], record['tool'], cjson.encode({ v = 1, tool = record['tool'], by = record['decidedBy'], atMs = o['nowMs'], approvalId = o['id'] }))
end
local entry = cjson.encode({
  type = 'approval', approvalId = o['id'], tool = record['tool'], callId = record['callId'], args = record['args'],
  decision = decision, via = via, by = record['decidedBy'], always = always, atMs = o['nowMs'],
})
if o['transcriptRetention'] > 0 then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', o['transcriptRetention'], '*', 'type', 'approval', 'data', entry)
else
  redis.call('XADD', KEYS[3], '*', 'type', 'approval', 'data', entry)
end
return { 'applied', encoded }
