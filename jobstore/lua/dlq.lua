-- KEYS: [1] job:dlq
-- ARGV: [1] how many entries
--
-- Returns the newest ARGV[1] DLQ entries, each as two items: its JSON
-- (job:dlq:<id>) and its job's hash (empty when the job is gone), without
-- the job's log (fields log, log_truncated): only a get carries it.
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)) do
  local e = redis.call('GET', 'job:dlq:' .. id)
  if e then
    table.insert(out, e)
    local h = redis.call('HGETALL', 'job:' .. id)
    for i = #h - 1, 1, -2 do
      if h[i] == 'log' or h[i] == 'log_truncated' then
        table.remove(h, i + 1)
        table.remove(h, i)
      end
    end
    table.insert(out, h)
  end
end
return out
