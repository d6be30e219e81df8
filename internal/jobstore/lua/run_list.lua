-- KEYS: [1] the index: run:index, or run:tenant:<tenant>
-- ARGV: [1] how many runs, [2] the tenant or '' (every tenant's)
--
-- Returns the hashes of the newest ARGV[1] runs of the index, newest
-- first. An id whose run is gone (its retention passed) or, with a tenant,
-- is another tenant's (the id made again after the first run expired) is
-- left out, and trimmed from the index.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local limit = tonumber(ARGV[1])
local out, gone = {}, {}
local from = 0
while #out < limit do
  local ids = redis.call('ZREVRANGE', KEYS[1], from, from + limit - #out - 1)
  if #ids == 0 then break end
  from = from + #ids
  for _, id in ipairs(ids) do
    local h = redis.call('HGETALL', P .. 'run:id:' .. id)
    local ok = #h > 0
    if ok and ARGV[2] ~= '' then
      ok = false
      for i = 1, #h, 2 do
        if h[i] == 'tenant' then ok = h[i + 1] == ARGV[2] end
      end
    end
    if ok then out[#out + 1] = h else gone[#gone + 1] = id end
  end
end
for i = 1, #gone, 1000 do
  redis.call('ZREM', KEYS[1], unpack(gone, i, math.min(i + 999, #gone)))
end
return out
