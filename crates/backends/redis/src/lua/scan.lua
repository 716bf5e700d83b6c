-- ARGV: snapshot id ('' for a write's unregistered reads), its revision, lease ms, min and max (ZRANGE BYLEX
-- bounds), '1' for descending order, page size. Returns {more, boundary,
-- k1, v1, ...}: the keys the snapshot holds in the range as far as the page
-- reached (to `boundary`, its last key, when `more` is '1').
local r0, cur = tonumber(ARGV[2]), revision()
local lo, hi, desc, limit = ARGV[4], ARGV[5], ARGV[6] == '1', tonumber(ARGV[7])
local function range(key, a, b, n)
  if desc then
    if n then return redis.call('ZRANGE', key, b, a, 'BYLEX', 'REV', 'LIMIT', 0, n) end
    return redis.call('ZRANGE', key, b, a, 'BYLEX', 'REV')
  end
  if n then return redis.call('ZRANGE', key, a, b, 'BYLEX', 'LIMIT', 0, n) end
  return redis.call('ZRANGE', key, a, b, 'BYLEX')
end
local keys = range(KEYS_Z, lo, hi, limit)
local more = #keys == limit and #keys > 0
local boundary = ''
if more then boundary = keys[#keys] end
local out = {more and '1' or '0', boundary}
if r0 == cur then
  if #keys > 0 then
    local vals = redis.call('HMGET', VALS, unpack(keys))
    for i, k in ipairs(keys) do
      if vals[i] then
        out[#out + 1] = k
        out[#out + 1] = vals[i]
      end
    end
  end
  return out
end
if ARGV[1] == '' then return redis.error_reply(MOVED_ON) end
if not keep_alive(ARGV[1], tonumber(ARGV[3])) then return redis.error_reply(EXPIRED) end
-- Keys changed since the snapshot, in the part of the range the page covers.
local covered_lo, covered_hi = lo, hi
if more then
  if desc then covered_lo = '[' .. boundary else covered_hi = '[' .. boundary end
end
local seen, candidates = {}, {}
for _, k in ipairs(keys) do
  seen[k] = true
  candidates[#candidates + 1] = k
end
for r = r0 + 1, cur do
  for _, k in ipairs(range(undo_keys(r), covered_lo, covered_hi, nil)) do
    if not seen[k] then
      seen[k] = true
      candidates[#candidates + 1] = k
    end
  end
end
if desc then
  table.sort(candidates, function(a, b) return less(b, a) end)
else
  table.sort(candidates, less)
end
for _, k in ipairs(candidates) do
  local v = value_at(k, r0, cur)
  if v then
    out[#out + 1] = k
    out[#out + 1] = v
  end
end
return out
