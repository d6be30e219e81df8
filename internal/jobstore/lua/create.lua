-- KEYS: [1] job hash job:<id>, [2] context blob ctx:<id>, [3] PENDING index job:index:PENDING, [4] job:recent, [5] event list job:events:<id>, [6] idempotency key job:idem:<tenant>:<key> or P (none: the namespace alone), [7] rate bucket job:rate:<tenant> or P, [8] job:deadlines, [9] the tenant's creation index job:tenant:<tenant>:all or P, [10..] the queues job:queue:<pool> the job may wait in
-- ARGV: [1] id, [2] created ms, [3] payload, [4] creation event JSON, [5] the request's digest (topic and payload: jobstore.idemDigest) or '', [6] rate (tokens a second, 0: no limit), [7] burst, [8] queue cap (0: none), [9] deadline ms or '', [10] number of queues, [11] the creation event's canonical encoding (its chain link's input), [12..] job hash field/value pairs
--
-- Creates a job unless its tenant used its idempotency key already (it
-- returns the first id: a duplicate when the request is the same, a
-- conflict when its digest is another), its id exists, every queue it may
-- wait in is full, or its tenant's token bucket is empty (refilled by
-- creation times). The key holds '<digest>:<first id>' (a bare id, from
-- before digests, is a duplicate whatever the request).
-- Returns {'created', queue lengths...}, {'duplicate', id},
-- {'conflict', id}, {'exists'}, {'queue_full'} or {'rate_limited'}.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
-- A key given as P alone is no key (a cluster needs every key in the slot).
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local id = ARGV[1]
if KEYS[6] ~= P then
  local first = redis.call('GET', KEYS[6])
  if first then
    local digest, fid = string.match(first, '^([^:]*):(.*)$')
    if not digest then return {'duplicate', first} end
    if digest ~= ARGV[5] then return {'conflict', fid} end
    return {'duplicate', fid}
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists'} end
local nq, cap = tonumber(ARGV[10]), tonumber(ARGV[8])
local lens, full = {}, nq > 0 and cap > 0
for i = 1, nq do
  lens[i] = redis.call('ZCARD', KEYS[9 + i])
  if lens[i] < cap then full = false end
end
if full then return {'queue_full'} end
local rate = tonumber(ARGV[6])
if KEYS[7] ~= P and rate > 0 then
  local burst, now = tonumber(ARGV[7]), tonumber(ARGV[2])
  local b = redis.call('HMGET', KEYS[7], 'tokens', 'ts')
  local tokens, ts = tonumber(b[1]) or burst, tonumber(b[2]) or now
  if now > ts then tokens = math.min(burst, tokens + (now - ts) * rate / 1000) else now = ts end
  if tokens < 1 then return {'rate_limited'} end
  redis.call('HSET', KEYS[7], 'tokens', tostring(tokens - 1), 'ts', tostring(now))
  redis.call('PEXPIRE', KEYS[7], math.ceil(burst / rate * 1000) + 1000)
end
-- The event log is a hash chain (jobstore/chain.go): the event carries
-- its link, the job the last one.
local chain = redis.sha1hex(ARGV[11])
redis.call('HSET', KEYS[1], 'chain', chain, unpack(ARGV, 12, #ARGV))
redis.call('SET', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[2], id)
-- The creation indexes List reads: every job's, and its tenant's. Both
-- keep every job until its retention passed (sweep.lua).
redis.call('ZADD', KEYS[4], ARGV[2], id)
if KEYS[9] ~= P then redis.call('ZADD', KEYS[9], ARGV[2], id) end
redis.call('RPUSH', KEYS[5], string.sub(ARGV[4], 1, -2) .. ',"chain":"' .. chain .. '"}')
if KEYS[6] ~= P then redis.call('SET', KEYS[6], ARGV[5] .. ':' .. id) end
if ARGV[9] ~= '' then redis.call('ZADD', KEYS[8], ARGV[9], id) end
local out = {'created'}
for i = 1, nq do out[#out + 1] = tostring(lens[i]) end
return out
