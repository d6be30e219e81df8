-- KEYS: [1] the lock: job:lock:<id> (dispatch) or job:lease:<name> (lease)
-- ARGV: [1] owner, [2] ttl ms
--
-- Takes the lock for ARGV[1], or extends it when ARGV[1] holds it already.
-- Returns 1, or 0 when another owner holds it.
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
