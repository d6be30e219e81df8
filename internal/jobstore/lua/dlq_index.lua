-- KEYS: [1] job:dlq, [2] job:dlq:indexed (how far the indexing went)
-- ARGV: [1] how many entries a call
--
-- Puts the DLQ entries recorded before the tenants' DLQ indexes existed
-- (job:tenant:<tenant>:dlq, which add_dlq.lua keeps) in them, ARGV[1]
-- entries a call, oldest first; KEYS[2] holds the score reached, then
-- 'done'. Indexing an entry twice changes nothing, so a call that starts
-- again where the last one stopped is safe. Returns 1 once done, else 0.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local from = redis.call('GET', KEYS[2])
if from == 'done' then return 1 end
from = from or '-inf'
local n = tonumber(ARGV[1])
local page = redis.call('ZRANGEBYSCORE', KEYS[1], from, '+inf', 'WITHSCORES', 'LIMIT', 0, n)
local last = page[#page]
if #page == 2 * n and last and ('' .. last) == from then
  -- A whole page of one score: take every entry of that score, then go past it.
  page = redis.call('ZRANGEBYSCORE', KEYS[1], from, from, 'WITHSCORES')
end
for i = 1, #page, 2 do
  local k = tenantDLQ(P, redis.call('GET', P .. 'job:dlq:' .. page[i]))
  if k then redis.call('ZADD', k, page[i + 1], page[i]) end
end
if #page < 2 * n then
  redis.call('SET', KEYS[2], 'done')
  return 1
end
if ('' .. last) == from then
  redis.call('SET', KEYS[2], '(' .. last)
else
  redis.call('SET', KEYS[2], last)
end
return 0
