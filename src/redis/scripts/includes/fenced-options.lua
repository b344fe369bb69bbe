--[[
  The script's options as the "options" include gives them, carrying the caller's fencing token
  `fence` (a string); without it the script ends with `ERR <script>: fence must be a string`.
  holdsLease(key, fence) is defined too (lease-token).
]]
--- @include "lease-token"
local opts, bad = decodeFencedOptions('@script')
if not opts then return bad end
