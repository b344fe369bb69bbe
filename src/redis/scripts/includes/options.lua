--[[
  The script's options: ARGV[1] decoded as a JSON object into `opts`. Anything else ends the script
  with the error reply `ERR <script>: options must be a JSON object`, nothing written.
]]
--- @include "decode-options"
local opts, bad = decodeOptions('@script')
if not opts then return bad end
