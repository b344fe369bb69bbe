--[[
  decodeOptions(script): the script's options (ARGV[1]) decoded as a JSON object, or nil and the
  error reply `ERR <script>: options must be a JSON object`.
]]
local function decodeOptions(script)
  local ok, opts = pcall(cjson.decode, ARGV[1])
  if ok and type(opts) == 'table' then return opts end
  return nil, redis.error_reply('ERR ' .. script .. ': options must be a JSON object')
end
