-- KEYS: [1] job:ended, [2] job:recent
-- ARGV: [1] how many entries at most
--
-- Drops from the creation indexes (job:recent, job:tenant:<tenant>:all)
-- the jobs whose retention passed. transition.lua adds each job that
-- ends with a retention to job:ended, scored by when its keys expire
-- (Redis's clock, as their TTL), as '<created ms>:<tenant length>:<tenant><id>'.
-- A job still there under that creation is dead-lettered (no TTL:
-- RemoveDLQ adds it again) or expires later (scored again). A job there
-- under another creation is the id made again: the index entries are the
-- new job's (its tenant's).
--
-- Returns how many entries it took, then the ids whose job is gone (a
-- sharded store drops their directory entries: sharded.go).
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {#due}
for _, m in ipairs(due) do
  local created, n, rest = string.match(m, '^(%-?%d+):(%d+):(.*)$')
  local keep = false
  if created then
    n = tonumber(n)
    local tenant, id = string.sub(rest, 1, n), string.sub(rest, n + 1)
    local h = P .. 'job:' .. id
    local cur = redis.call('HMGET', h, 'created_at', 'tenant')
    if cur[1] == created then
      local ttl = redis.call('PTTL', h)
      if ttl > 0 then
        redis.call('ZADD', KEYS[1], string.format('%.0f', now + ttl), m)
        keep = true
      end
    else
      if not cur[1] then
        redis.call('ZREM', KEYS[2], id)
        out[#out + 1] = id
      end
      if tenant ~= '' and cur[2] ~= tenant then redis.call('ZREM', P .. 'job:tenant:' .. tenant .. ':all', id) end
    end
  end
  if not keep then redis.call('ZREM', KEYS[1], m) end
end
return out
