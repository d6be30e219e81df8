-- KEYS: [1] run hash run:id:<id>, [2] run:active
-- ARGV: [1] id, [2] owner, [3] until ms ('' for none), [4] until score (0 for none), [5] now ms
--
-- Makes ARGV[2] the run's owner until ARGV[3], when the run has not ended
-- and nobody else holds its claim: it has no owner, its owner is ARGV[2]
-- (the claim is extended, or shortened, to ARGV[3]), or its claim ran out
-- (owned_until <= now).
--
-- Returns 1 (claimed), 0 (another holds it, or the run ended) or -1 (no
-- such run).
local f = redis.call('HMGET', KEYS[1], 'state', 'owner', 'owned_until')
if not f[1] then return -1 end
-- 'RUNNING' is jobstore.RunRunning.
if f[1] ~= 'RUNNING' then return 0 end
local owner = f[2] or ''
if owner ~= '' and owner ~= ARGV[2] and (tonumber(f[3]) or 0) > tonumber(ARGV[5]) then return 0 end
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'owned_until', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
return 1
