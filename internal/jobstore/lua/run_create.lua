-- KEYS: [1] run hash run:id:<id>, [2] event list run:log:<id>, [3] run:index, [4] tenant index run:tenant:<tenant> or P (none: the namespace alone), [5] run:active, [6] run:ended
-- ARGV: [1] id, [2] tenant, [3] state, [4] created ms, [5] owned-until ms (0: never owned), [6] retention ms (0: keep for ever), [7] now ms, [8] number of events, [9..] the events, then the run hash's field/value pairs
--
-- Creates a run with its first events unless its id exists, and indexes
-- it: run:index and its tenant's by creation, run:active by owned-until
-- while it runs. A run created ended is kept for the retention, then
-- expires, as one that ends (run_append.lua).
--
-- First it trims from the indexes up to 100 ended runs whose retention
-- passed. run:ended holds them, scored by the ms their keys expire, as
-- '<created ms>:<tenant length>:<tenant><id>'; a run still there under
-- that creation (this clock ahead of Redis's) is left for a later call.
-- A run there under another creation is the id made again after the
-- first expired: the index entries are the new run's (its tenant's).
--
-- Returns 'created' or 'exists'.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
-- A key given as P alone is no key (a cluster needs every key in the slot).
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local due = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', ARGV[7], 'LIMIT', 0, 100)
for _, m in ipairs(due) do
  local created, n, rest = string.match(m, '^(%-?%d+):(%d+):(.*)$')
  if not created then
    redis.call('ZREM', KEYS[6], m)
  else
    n = tonumber(n)
    local tenant, rid = string.sub(rest, 1, n), string.sub(rest, n + 1)
    local cur = redis.call('HMGET', P .. 'run:id:' .. rid, 'created_at', 'tenant')
    if cur[1] == created and cur[2] == tenant then break end
    redis.call('ZREM', KEYS[6], m)
    if not cur[1] then redis.call('ZREM', KEYS[3], rid) end
    if tenant ~= '' and cur[2] ~= tenant then redis.call('ZREM', P .. 'run:tenant:' .. tenant, rid) end
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
local id, tenant, created = ARGV[1], ARGV[2], ARGV[4]
local last = 8 + tonumber(ARGV[8])
-- The log of an earlier run of that id expired with its hash; a stray one
-- is not this run's.
redis.call('DEL', KEYS[2])
for i = 9, last, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 999, last)))
end
redis.call('HSET', KEYS[1], unpack(ARGV, last + 1, #ARGV))
redis.call('ZADD', KEYS[3], created, id)
if KEYS[4] ~= P then redis.call('ZADD', KEYS[4], created, id) end
-- 'RUNNING' is jobstore.RunRunning.
if ARGV[3] == 'RUNNING' then
  redis.call('ZADD', KEYS[5], ARGV[5], id)
else
  local retention = tonumber(ARGV[6])
  if retention > 0 then
    redis.call('PEXPIRE', KEYS[1], retention)
    redis.call('PEXPIRE', KEYS[2], retention)
    redis.call('ZADD', KEYS[6], string.format('%.0f', tonumber(ARGV[7]) + retention),
      created .. ':' .. #tenant .. ':' .. tenant .. id)
  end
end
return 'created'
