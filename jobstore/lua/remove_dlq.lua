-- KEYS: [1] job:dlq
-- ARGV: [1] job id
--
-- Removes the job's DLQ entry. Returns 1 when there was one, else 0.
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('DEL', 'job:dlq:' .. ARGV[1])
