-- KEYS: [1] a state index job:index:<STATE>
-- ARGV: [1] cut ms (jobs that entered the state before it), [2] how many jobs to look at
--
-- Returns the ids, among the first ARGV[2] jobs of the index that entered
-- it before ARGV[1], of those whose result blob res:<id> exists.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))) do
  if redis.call('EXISTS', P .. 'res:' .. id) == 1 then table.insert(out, id) end
end
return out
