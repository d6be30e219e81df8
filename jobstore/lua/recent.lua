-- KEYS: [1] job:recent
-- ARGV: [1] how many jobs
--
-- Returns the hashes of the newest ARGV[1] jobs, newest first (a job whose
-- hash is gone is left out).
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)) do
  local h = redis.call('HGETALL', 'job:' .. id)
  if #h > 0 then table.insert(out, h) end
end
return out
