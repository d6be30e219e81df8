-- KEYS: [1] run hash run:id:<id>, [2] event list run:log:<id>, [3] run:active, [4] run:ended
-- ARGV: [1] id, [2] owner, [3] after: the events the log must hold, [4] state or '' (unchanged), [5] reason, [6] now ms, [7] retention ms (0: keep for ever), [8..] the events
--
-- Appends events to a run's log and sets its state, reason, updated_at and
-- event count, when the run has not ended, ARGV[2] holds its claim (is its
-- owner: a claim that ran out is still its owner's until another takes
-- it, run_claim.lua), and its log holds ARGV[3] events, checked in that
-- order. A state other than RUNNING ends the run: it leaves run:active,
-- and its keys expire after the retention (run:ended has it, so that
-- run_create.lua trims it from the indexes then).
--
-- Returns {'ok'}, {'notfound'}, {'ended', state}, {'owner', owner} or
-- {'moved', events the log holds}.
local f = redis.call('HMGET', KEYS[1], 'state', 'owner', 'events', 'tenant', 'created_at')
local cur = f[1]
if not cur then return {'notfound'} end
-- 'RUNNING' is jobstore.RunRunning.
if cur ~= 'RUNNING' then return {'ended', cur} end
local owner = f[2] or ''
if owner ~= ARGV[2] then return {'owner', owner} end
local n = tonumber(f[3]) or 0
if n ~= tonumber(ARGV[3]) then return {'moved', tostring(n)} end
for i = 8, #ARGV, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
local state = ARGV[4]
if state == '' then state = cur end
redis.call('HSET', KEYS[1], 'state', state, 'reason', ARGV[5], 'updated_at', ARGV[6],
  'events', tostring(n + math.max(#ARGV - 7, 0)))
if state ~= 'RUNNING' then
  local id, tenant = ARGV[1], f[4] or ''
  redis.call('ZREM', KEYS[3], id)
  local retention = tonumber(ARGV[7])
  if retention > 0 then
    redis.call('PEXPIRE', KEYS[1], retention)
    redis.call('PEXPIRE', KEYS[2], retention)
    redis.call('ZADD', KEYS[4], string.format('%.0f', tonumber(ARGV[6]) + retention),
      (f[5] or '0') .. ':' .. #tenant .. ':' .. tenant .. id)
  end
end
return {'ok'}
