-- KEYS: [1] job:dlq, or a tenant's job:tenant:<tenant>:dlq
-- ARGV: [1] how many entries
--
-- Returns the newest ARGV[1] DLQ entries (of the tenant's index: its own), each as two items: its JSON
-- (job:dlq:<id>) and its job's hash (empty when the job is gone), without
-- the job's log (fields log, log_truncated): only a get carries it.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)) do
  local e = redis.call('GET', P .. 'job:dlq:' .. id)
  if e then
    table.insert(out, e)
    local h = redis.call('HGETALL', P .. 'job:' .. id)
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
