-- ARGV: snapshot id ('' for a write's unregistered reads), its revision, lease ms,
-- key. Returns {} or {value}.
local r0, cur = tonumber(ARGV[2]), revision()
local v
if r0 == cur then
  v = redis.call('HGET', VALS, ARGV[4])
else
  if ARGV[1] == '' then return redis.error_reply(MOVED_ON) end
  if not keep_alive(ARGV[1], tonumber(ARGV[3])) then return redis.error_reply(EXPIRED) end
  v = value_at(ARGV[4], r0, cur)
end
if v then return {v} end
return {}
