-- ARGV: snapshot id ('' for unregistered reads), its revision, lease ms,
-- then keys. Returns {found, v...}: `found` has '1' for each key present
-- and '0' for each absent, and the values of the present ones follow in
-- order.
local r0, cur = tonumber(ARGV[2]), revision()
local n = #ARGV - 3
local vals
if r0 == cur then
  if n == 0 then return {''} end
  vals = redis.call('HMGET', VALS, unpack(ARGV, 4))
else
  if ARGV[1] == '' then return redis.error_reply(MOVED_ON) end
  if not keep_alive(ARGV[1], tonumber(ARGV[3])) then return redis.error_reply(EXPIRED) end
  vals = {}
  for i = 1, n do vals[i] = value_at(ARGV[3 + i], r0, cur) end
end
local found, out = {}, {''}
for i = 1, n do
  if vals[i] then
    found[i] = '1'
    out[#out + 1] = vals[i]
  else
    found[i] = '0'
  end
end
out[1] = table.concat(found)
return out
