-- KEYS: [1] the worker's failure count job:wfail:<worker>, [2] job:quarantine
-- ARGV: [1] worker, [2] now ms, [3] window ms, [4] threshold, [5] cooldown ms
--
-- Counts a failure of the worker within the window; at the threshold-th it
-- resets the count and quarantines the worker until now + cooldown.
-- Returns the end of the quarantine in ms, or 0.
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
if n >= tonumber(ARGV[4]) then
  redis.call('DEL', KEYS[1])
  local till = tonumber(ARGV[2]) + tonumber(ARGV[5])
  redis.call('ZADD', KEYS[2], till, ARGV[1])
  return till
end
return 0
