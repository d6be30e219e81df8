-- KEYS: [1] job hash job:<id>, [2] event list job:events:<id>
-- ARGV: [1] id, [2] to state, [3] required from state or '', [4] now ms, [5] event JSON, [6] if-worker or '', [7] tenant limit (0: none), [8] worker limit (0: none), [9] lock owner or '', [10] lock ttl ms, [11] wait pool or '', [12] wait score, [13] wait until ms or '', [14] wait cap (0: none), [15] '1' with a wait else '', [16] new worker or '', [17] deadline ms or '', [18] if-attempt (0: none), [19] if-tenant or '', [20] retention ms (0: keep for ever), [21] via state or '', [22] via event JSON or '', [23] '1' to return the brief fields only else '', [24] the via event's canonical encoding or '', [25] the event's canonical encoding, [26] '1' to store the next as the job's result blob (res:<id>) else '', [27] the result or '', [28..] job hash field/value pairs to set
--
-- Moves a job, with the checks of Transition (jobstore.go), and keeps the
-- state indexes, the waiting sets, the tenant's and workers' active sets,
-- job:deadlines and the dispatch lock in step.
--
-- The tables allowed[from][to], active[state] and terminal[state] are not
-- written here: redis.go prepends them, rendered once from jobstore.go's
-- transitions, State.Active and State.Terminal, the one place they are
-- decided.
--
-- Returns {'ok', worker jobs, the worker before the move or '', '1' when
-- the move is the job's first (its log held only its creation) else '',
-- hash pairs...}
-- (only the brief fields with
-- ARGV[23]), {'notfound'} (also for
-- another tenant's job, so that the reply says nothing of it), {'refused',
-- current state}, {'worker', current worker}, {'attempt', current attempt,
-- current state}, {'locked', owner}, {'tenant', held, tenant},
-- {'worker_full', held} or {'queue_full', held}.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local id, to, from, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
-- A move via another state (Transition.Via) is checked through it, and
-- logs its event first.
local via = ARGV[21]
local h = KEYS[1]
local ifAttempt = tonumber(ARGV[18])
-- One HMGET reads what the checks need and what the reply reports: a
-- Brief reply is these fields with the move's writes laid over them
-- (jobstore.briefFields), so the job is not read again.
local f = redis.call('HMGET', h, 'state', 'worker_id', 'tenant', 'waiting', 'deadline', 'attempt', 'locked',
  'idempotency_key', 'id', 'topic', 'pool', 'result_ptr', 'chain', 'created_at')
local cur = f[1]
if not cur then return {'notfound'} end
if ARGV[19] ~= '' and f[3] ~= ARGV[19] then return {'notfound'} end
local hasWait = ARGV[15] == '1'
local ok
if from ~= '' and cur ~= from then ok = false
elseif cur == 'PENDING' and to == 'PENDING' then ok = hasWait
elseif via ~= '' then ok = allowed[cur] and allowed[cur][via] and allowed[via][to]
else ok = allowed[cur] and allowed[cur][to] end
if not ok then return {'refused', cur} end
local oldw = f[2] or ''
if ARGV[6] ~= '' and oldw ~= ARGV[6] then return {'worker', oldw} end
if ifAttempt > 0 then
  local attempt = tonumber(f[6]) or 0
  if attempt ~= ifAttempt then return {'attempt', tostring(attempt), cur} end
end
local lockKey = P .. 'job:lock:' .. id
if ARGV[9] ~= '' then
  local holder = redis.call('GET', lockKey)
  if holder and holder ~= ARGV[9] then return {'locked', holder} end
end
local tenant = f[3] or ''
local tenantKey = P .. 'job:tenant:' .. tenant .. ':active'
local wasActive = active[cur] or false
local neww = ARGV[16]
if neww == '' then neww = oldw end
if to == 'PENDING' then neww = '' end
if active[to] and not wasActive and tonumber(ARGV[7]) > 0 then
  local n = redis.call('SCARD', tenantKey)
  if n >= tonumber(ARGV[7]) then return {'tenant', tostring(n), tenant} end
end
local wk = P .. 'job:worker:' .. neww .. ':jobs'
local held = -1
if active[to] and neww ~= '' and tonumber(ARGV[8]) > 0 and not (wasActive and neww == oldw) then
  held = redis.call('SCARD', wk)
  if held >= tonumber(ARGV[8]) then return {'worker_full', tostring(held)} end
end
local waitKey
if hasWait then
  if ARGV[13] ~= '' then
    waitKey = 'deferred'
  else
    waitKey = 'queue:' .. ARGV[11]
    local cap = tonumber(ARGV[14])
    if cap > 0 and not redis.call('ZSCORE', P .. 'job:' .. waitKey, id) then
      local n = redis.call('ZCARD', P .. 'job:' .. waitKey)
      if n >= cap then return {'queue_full', tostring(n)} end
    end
  end
end
-- The event log is a hash chain (jobstore/chain.go): each event carries
-- its link, the job the last one.
local viaEvent, event
local chain = f[13] or ''
if via ~= '' then
  chain = redis.sha1hex(chain .. ARGV[24])
  viaEvent = string.sub(ARGV[22], 1, -2) .. ',"chain":"' .. chain .. '"}'
end
chain = redis.sha1hex(chain .. ARGV[25])
event = string.sub(ARGV[5], 1, -2) .. ',"chain":"' .. chain .. '"}'
redis.call('HSET', h, 'state', to, 'updated_at', now, 'chain', chain, unpack(ARGV, 28, #ARGV))
-- Transition.StoreResult: the result with the move that is made, never
-- with one refused above.
if ARGV[26] == '1' then redis.call('SET', P .. 'res:' .. id, ARGV[27]) end
local waiting = f[4]
if waiting then
  redis.call('ZREM', P .. 'job:' .. waiting, id)
  redis.call('HDEL', h, 'waiting')
end
redis.call('ZREM', P .. 'job:index:' .. cur, id)
if waitKey then
  if ARGV[13] ~= '' then
    redis.call('ZADD', P .. 'job:deferred', ARGV[13], id)
  else
    redis.call('ZADD', P .. 'job:' .. waitKey, ARGV[12], id)
  end
  redis.call('HSET', h, 'waiting', waitKey)
else
  redis.call('ZADD', P .. 'job:index:' .. to, now, id)
end
if active[to] then
  redis.call('SADD', tenantKey, id)
else
  redis.call('SREM', tenantKey, id)
end
if to == 'PENDING' then redis.call('HDEL', h, 'worker_id') end
if oldw ~= '' and oldw ~= neww then redis.call('SREM', P .. 'job:worker:' .. oldw .. ':jobs', id) end
if neww ~= '' then
  local changed
  if active[to] then changed = redis.call('SADD', wk, id) else changed = redis.call('SREM', wk, id) end
  if held >= 0 then
    held = held + changed
  else
    held = redis.call('SCARD', wk)
  end
else
  held = 0
end
if ARGV[17] ~= '' then redis.call('ZADD', P .. 'job:deadlines', ARGV[17], id) end
if terminal[to] and (f[5] or ARGV[17] ~= '') then redis.call('ZREM', P .. 'job:deadlines', id) end
-- An ended job's live notes go: its result holds the whole output.
if terminal[to] then redis.call('DEL', P .. 'job:live:' .. id) end
-- The hash's 'locked' says a lock was taken, so that a job never locked
-- costs no DEL.
if ARGV[9] ~= '' then
  redis.call('SET', lockKey, ARGV[9], 'PX', ARGV[10])
  if not f[7] then redis.call('HSET', h, 'locked', '1') end
elseif f[7] and to ~= 'SCHEDULED' and to ~= 'DISPATCHED' then
  -- Past DISPATCHED, or back to PENDING, nobody is dispatching the job
  -- (jobstore.releasesLock).
  redis.call('DEL', lockKey)
  redis.call('HDEL', h, 'locked')
end
local logged
if via ~= '' then
  logged = redis.call('RPUSH', KEYS[2], viaEvent, event) - 2
else
  logged = redis.call('RPUSH', KEYS[2], event) - 1
end
local first = ''
if logged == 1 then first = '1' end
-- A job that ended is kept for the retention, then its keys expire (the
-- state indexes are trimmed by Sweep, and the creation indexes by
-- sweep.lua through job:ended, scored by when the keys expire on Redis's
-- clock).
local retention = tonumber(ARGV[20])
if terminal[to] and retention > 0 then
  redis.call('PEXPIRE', h, retention)
  redis.call('PEXPIRE', KEYS[2], retention)
  redis.call('PEXPIRE', P .. 'ctx:' .. id, retention)
  redis.call('PEXPIRE', P .. 'res:' .. id, retention)
  local idem = f[8]
  if idem and idem ~= '' then redis.call('PEXPIRE', P .. 'job:idem:' .. tenant .. ':' .. idem, retention) end
  local t = redis.call('TIME')
  local expires = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + retention
  redis.call('ZADD', P .. 'job:ended', string.format('%.0f', expires), (f[14] or '') .. ':' .. #tenant .. ':' .. tenant .. id)
end
if ARGV[23] == '1' then
  -- Transition.Brief: jobstore.briefFields, as read above, with this
  -- move's writes over them.
  local v = {id = f[9], topic = f[10], tenant = f[3], state = to, pool = f[11], worker_id = f[2],
    attempt = f[6], result_ptr = f[12], updated_at = now, created_at = f[14]}
  for i = 28, #ARGV - 1, 2 do
    if brief[ARGV[i]] then v[ARGV[i]] = ARGV[i + 1] end
  end
  if to == 'PENDING' then v.worker_id = nil end
  local out = {'ok', tostring(held), oldw, first}
  for _, name in ipairs(briefNames) do
    if v[name] then
      out[#out + 1] = name
      out[#out + 1] = v[name]
    end
  end
  return out
end
local out = redis.call('HGETALL', h)
table.insert(out, 1, first)
table.insert(out, 1, oldw)
table.insert(out, 1, tostring(held))
table.insert(out, 1, 'ok')
return out
