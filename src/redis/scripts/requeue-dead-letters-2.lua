--[[
  Moves every dead letter back to the front of the inbox, right to left onto its head: the dead
  letters come back first, in their own order, ahead of anything already waiting.

  Input:
    KEYS[1] the session's dead letters (list)
    KEYS[2] the session's inbox (list)

  Output:
    the number of messages moved
]]
local moved = 0
while redis.call('LMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT') do moved = moved + 1 end
return moved
