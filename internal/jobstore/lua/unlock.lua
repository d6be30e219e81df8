-- KEYS: [1] the lock: job:lock:<id> (dispatch) or job:lease:<name> (lease)
-- ARGV: [1] owner
--
-- Deletes the lock if ARGV[1] holds it. Returns 1 when it did, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
