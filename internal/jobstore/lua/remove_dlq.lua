-- KEYS: [1] job:dlq, [2] job:ended
-- ARGV: [1] job id, [2] retention ms (0: keep for ever)
--
-- Removes the job's DLQ entry, from job:dlq and from its tenant's
-- job:tenant:<tenant>:dlq. With a retention, the job is then kept for
-- it, as any ended job: its keys get the TTL back (AddDLQ took it away)
-- and it goes back to job:ended (sweep.lua). Returns 1 when there was an
-- entry, else 0.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local id = ARGV[1]
redis.call('ZREM', KEYS[1], id)
local k = tenantDLQ(P, redis.call('GET', P .. 'job:dlq:' .. id))
if k then redis.call('ZREM', k, id) end
local n = redis.call('DEL', P .. 'job:dlq:' .. id)
local retention = tonumber(ARGV[2])
if n == 1 and retention > 0 then
  local h = P .. 'job:' .. id
  local f = redis.call('HMGET', h, 'created_at', 'tenant')
  for _, k in ipairs({h, P .. 'job:events:' .. id, P .. 'ctx:' .. id, P .. 'res:' .. id}) do
    redis.call('PEXPIRE', k, retention)
  end
  if f[1] then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local tenant = f[2] or ''
    redis.call('ZADD', KEYS[2], string.format('%.0f', now + retention), f[1] .. ':' .. #tenant .. ':' .. tenant .. id)
  end
end
return n
