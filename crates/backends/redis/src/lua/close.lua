-- ARGV: snapshot id.
redis.call('ZREM', SNAPS, ARGV[1])
redis.call('ZREM', SNAPDL, ARGV[1])
return 1
