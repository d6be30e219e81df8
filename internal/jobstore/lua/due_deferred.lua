-- KEYS: [1] job:deferred
-- ARGV: [1] now ms, [2] how many jobs at most
--
-- Hands out up to ARGV[2] deferred jobs due by ARGV[1]: each leaves
-- job:deferred, stops waiting and is indexed PENDING as of now. Returns
-- their hashes, soonest first.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))) do
  redis.call('ZREM', KEYS[1], id)
  local h = P .. 'job:' .. id
  if redis.call('HGET', h, 'waiting') == 'deferred' then
    redis.call('HDEL', h, 'waiting')
    redis.call('ZADD', P .. 'job:index:PENDING', ARGV[1], id)
    table.insert(out, redis.call('HGETALL', h))
  end
end
return out
