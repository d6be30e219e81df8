-- KEYS: [1] job:dlq, [2] the entry job:dlq:<id>
-- ARGV: [1] job id, [2] dead-letter ms, [3] the entry JSON, [4] its tenant
--
-- Records a dead-lettered job, replacing an earlier entry for it: the
-- entry, its place in job:dlq and in its tenant's job:tenant:<tenant>:dlq
-- (an earlier entry's tenant, when another, loses it). A dead-lettered
-- job is kept while its entry is (retry reads it): its keys lose their TTL.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local id, tenant = ARGV[1], ARGV[4]
local old = redis.call('GET', KEYS[2])
if old then
  local ok, e = pcall(cjson.decode, old)
  local was = ok and type(e) == 'table' and type(e.tenant) == 'string' and e.tenant or ''
  if was ~= '' and was ~= tenant then redis.call('ZREM', P .. 'job:tenant:' .. was .. ':dlq', id) end
end
redis.call('SET', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[1], ARGV[2], id)
if tenant ~= '' then redis.call('ZADD', P .. 'job:tenant:' .. tenant .. ':dlq', ARGV[2], id) end
for _, k in ipairs({P .. 'job:' .. id, P .. 'job:events:' .. id, P .. 'ctx:' .. id, P .. 'res:' .. id}) do
  redis.call('PERSIST', k)
end
return 1
