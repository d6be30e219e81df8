-- KEYS: [1] the index read: job:recent, job:tenant:<tenant>:all or job:index:<STATE>
-- ARGV: [1] page size, [2] how many entries to examine at most, [3] cursor score or '', [4] cursor id or '', [5] start under this score (until ms) or '', [6] stop under this score (since ms) or '', [7] tenant or '', [8] state or '', [9] topic or '', [10] created ms must be under this or '', [11] created ms must be at least this or '', [12] worker or ''
--
-- A page of List (jobstore/list.go): the index's entries in descending
-- (score, id) order, from strictly below the cursor (or from under
-- ARGV[5], or the top), each job that passes the filters. It examines
-- ARGV[2] entries at most: a page may end short with a cursor. An id
-- whose hash is gone (expired, not yet swept) is skipped.
--
-- Returns {next score, next id, then score, id, hash pairs for each job};
-- the next position is '', '' when the index holds nothing more. A job's
-- log (fields log, log_truncated) is left out: only a get carries it.
-- P: the key namespace (jobstore/keys.go), read off the first key: every key
-- derived here starts with it, so that all are in that key's cluster slot.
local P = string.match(KEYS[1], '^{[^}]*}') or ''
local key = KEYS[1]
local limit, budget = tonumber(ARGV[1]), tonumber(ARGV[2])
-- a < b bytewise, as a zset orders members of one score (Lua's own
-- comparison follows the server's locale).
local function before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local start = 0
if ARGV[3] ~= '' then
  local sc, cid = ARGV[3], ARGV[4]
  local s = redis.call('ZSCORE', key, cid)
  if s and tonumber(s) == tonumber(sc) then
    start = redis.call('ZREVRANK', key, cid) + 1
  else
    -- The cursor's id left the index (or moved): find its place among
    -- the entries of its score by a binary search over ranks.
    local above = redis.call('ZCOUNT', key, '(' .. sc, '+inf')
    local lo, hi = 0, redis.call('ZCOUNT', key, sc, sc)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local m = redis.call('ZREVRANGE', key, above + mid, above + mid)[1]
      if m and before(cid, m) then lo = mid + 1 else hi = mid end
    end
    start = above + lo
  end
elseif ARGV[5] ~= '' then
  start = redis.call('ZCOUNT', key, ARGV[5], '+inf')
end
local since = tonumber(ARGV[6])
local tenant, state, topic = ARGV[7], ARGV[8], ARGV[9]
local untilF, sinceF = tonumber(ARGV[10]), tonumber(ARGV[11])
local worker = ARGV[12] or ''
local filtered = tenant ~= '' or state ~= '' or topic ~= '' or worker ~= '' or untilF ~= nil or sinceF ~= nil
local out = {'', ''}
local n, examined = 0, 0
local lastS, lastID
local pos, done = start, false
while not done do
  -- One entry more than may be examined: it says whether there is more.
  local want = math.min(budget - examined, limit - n) + 1
  local page = redis.call('ZREVRANGE', key, pos, pos + want - 1, 'WITHSCORES')
  pos = pos + #page / 2
  for i = 1, #page, 2 do
    local id, score = page[i], page[i + 1]
    if since and tonumber(score) < since then
      done = true
      break
    end
    if n == limit or examined == budget then
      out[1], out[2] = lastS, lastID
      done = true
      break
    end
    examined = examined + 1
    lastS, lastID = score, id
    local ok = true
    if filtered then
      local f = redis.call('HMGET', P .. 'job:' .. id, 'tenant', 'state', 'topic', 'created_at', 'worker_id')
      if not f[2] then ok = false
      elseif tenant ~= '' and f[1] ~= tenant then ok = false
      elseif state ~= '' and f[2] ~= state then ok = false
      elseif topic ~= '' and f[3] ~= topic then ok = false
      elseif worker ~= '' and f[5] ~= worker then ok = false
      elseif untilF and (tonumber(f[4]) or 0) >= untilF then ok = false
      elseif sinceF and (tonumber(f[4]) or 0) < sinceF then ok = false end
    end
    if ok then
      local h = redis.call('HGETALL', P .. 'job:' .. id)
      for i = #h - 1, 1, -2 do
        if h[i] == 'log' or h[i] == 'log_truncated' then
          table.remove(h, i + 1)
          table.remove(h, i)
        end
      end
      if #h > 0 then
        n = n + 1
        out[#out + 1] = score
        out[#out + 1] = id
        out[#out + 1] = h
      end
    end
  end
  if #page < 2 * want then break end
end
return out
