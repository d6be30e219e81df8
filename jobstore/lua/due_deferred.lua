-- KEYS: [1] job:deferred
-- ARGV: [1] now ms, [2] how many jobs at most
--
-- Hands out up to ARGV[2] deferred jobs due by ARGV[1]: each leaves
-- job:deferred, stops waiting and is indexed PENDING as of now. Returns
-- their hashes, soonest first.
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))) do
  redis.call('ZREM', KEYS[1], id)
  local h = 'job:' .. id
  if redis.call('HGET', h, 'waiting') == 'deferred' then
    redis.call('HDEL', h, 'waiting')
    redis.call('ZADD', 'job:index:PENDING', ARGV[1], id)
    table.insert(out, redis.call('HGETALL', h))
  end
end
return out
