-- KEYS: [1] the job's live notes: job:live:<id>, [2] the job: job:<id>
-- ARGV: [1] kind: 'o' (a chunk of streamed output) or 'p' (a progress report), [2] attempt, [3] the chunk's seq (output), [4] the chunk, or the progress report as JSON, [5] most bytes of output kept, [6] most progress reports kept, [7] ms the notes are kept after the last
--
-- Adds a note of a running job's attempt (the job DISPATCHED or RUNNING
-- at that attempt: a late note of a job that ended keeps nothing): the
-- notes of an earlier attempt
-- are dropped when a later one's first arrives, and a note of an attempt
-- older than the one kept is refused. A chunk is kept once per seq, and
-- not past ARGV[5] bytes in all; a progress report not past ARGV[6]
-- reports. Either way past the bound, 'trunc' is set. Returns 1 when the
-- note was kept, else 0.
local key, at = KEYS[1], tonumber(ARGV[2])
local job = redis.call('HMGET', KEYS[2], 'state', 'attempt')
if (job[1] ~= 'RUNNING' and job[1] ~= 'DISPATCHED') or tonumber(job[2]) ~= at then return 0 end
local cur = tonumber(redis.call('HGET', key, 'attempt') or '0')
if at < cur then return 0 end
if at > cur then
  redis.call('DEL', key)
  redis.call('HSET', key, 'attempt', at)
end
local kept = 0
if ARGV[1] == 'o' then
  local bytes = tonumber(redis.call('HGET', key, 'ob') or '0')
  if bytes + #ARGV[4] > tonumber(ARGV[5]) then
    redis.call('HSET', key, 'trunc', '1')
  elseif redis.call('HSETNX', key, 'o:' .. ARGV[3], ARGV[4]) == 1 then
    redis.call('HINCRBY', key, 'ob', #ARGV[4])
    kept = 1
  end
else
  local n = tonumber(redis.call('HGET', key, 'pn') or '0')
  if n >= tonumber(ARGV[6]) then
    redis.call('HSET', key, 'trunc', '1')
  else
    redis.call('HSET', key, 'p:' .. (n + 1), ARGV[4], 'pn', n + 1)
    kept = 1
  end
end
redis.call('PEXPIRE', key, ARGV[7])
return kept
