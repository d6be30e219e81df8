-- KEYS: [1] a pool queue job:queue:<pool>
-- ARGV: [1] how many jobs
--
-- Returns the queue's first ARGV[1] jobs, lowest score first, without
-- removing them: a score and a hash each, flat.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local out = {}
local heads = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
for i = 1, #heads, 2 do
  local h = redis.call('HGETALL', P .. 'job:' .. heads[i])
  if #h > 0 then
    table.insert(out, heads[i + 1])
    table.insert(out, h)
  end
end
return out
