-- KEYS: [1] job:dlq
-- ARGV: [1] how many entries
--
-- Returns the newest ARGV[1] DLQ entries, each as two items: its JSON
-- (job:dlq:<id>) and its job's hash (empty when the job is gone).
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)) do
  local e = redis.call('GET', 'job:dlq:' .. id)
  if e then
    table.insert(out, e)
    table.insert(out, redis.call('HGETALL', 'job:' .. id))
  end
end
return out
