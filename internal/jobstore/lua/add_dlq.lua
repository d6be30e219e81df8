-- KEYS: [1] job:dlq, [2] the entry job:dlq:<id>
-- ARGV: [1] job id, [2] dead-letter ms, [3] the entry JSON
--
-- Records a dead-lettered job, replacing an earlier entry for it: the
-- entry, its place in job:dlq and in its tenant's job:tenant:<tenant>:dlq
-- (an earlier entry's tenant, when another, loses it). A dead-lettered
-- job is kept while its entry is (retry reads it): its keys lose their TTL.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local id = ARGV[1]
local was = tenantDLQ(P, redis.call('GET', KEYS[2]))
local is = tenantDLQ(P, ARGV[3])
if was and was ~= is then redis.call('ZREM', was, id) end
redis.call('SET', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[1], ARGV[2], id)
if is then redis.call('ZADD', is, ARGV[2], id) end
for _, k in ipairs({P .. 'job:' .. id, P .. 'job:events:' .. id, P .. 'ctx:' .. id, P .. 'res:' .. id}) do
  redis.call('PERSIST', k)
end
return 1
