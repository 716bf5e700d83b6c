-- ARGV: snapshot id, lease ms. Registers the snapshot at the current revision.
expire_snapshots()
local cur = revision()
redis.call('ZADD', SNAPS, cur, ARGV[1])
redis.call('ZADD', SNAPDL, now_ms() + tonumber(ARGV[2]), ARGV[1])
return tostring(cur)
