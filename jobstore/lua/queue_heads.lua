-- KEYS: [1] a pool queue job:queue:<pool>
-- ARGV: [1] how many jobs
--
-- Returns the hashes of the queue's first ARGV[1] jobs, lowest score first,
-- without removing them.
local out = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)) do
  local h = redis.call('HGETALL', 'job:' .. id)
  if #h > 0 then table.insert(out, h) end
end
return out
