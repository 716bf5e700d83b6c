-- ARGV: the expected revision ('' for any), then operations: 'p' key value,
-- 'd' key, 'r' min max (a ZRANGE BYLEX range to delete). Returns
-- {'ok', new revision} or {'conflict', current revision}, having written
-- nothing then.
local cur = revision()
if ARGV[1] ~= '' and tonumber(ARGV[1]) ~= cur then return {'conflict', tostring(cur)} end
expire_snapshots()
local keep = redis.call('ZCARD', SNAPS) > 0
local nxt = cur + 1
local U, UK = undo_hash(nxt), undo_keys(nxt)
-- A registered snapshot reads what a key was before this commit from its undo record.
local function save(k)
  if keep and redis.call('HSETNX', U, k, 'n') == 1 then
    local old = redis.call('HGET', VALS, k)
    if old then redis.call('HSET', U, k, 'v' .. old) end
    redis.call('ZADD', UK, 0, k)
  end
end
local i = 2
while i <= #ARGV do
  local op = ARGV[i]
  if op == 'p' then
    local k = ARGV[i + 1]
    save(k)
    redis.call('HSET', VALS, k, ARGV[i + 2])
    redis.call('ZADD', KEYS_Z, 0, k)
    i = i + 3
  elseif op == 'd' then
    local k = ARGV[i + 1]
    save(k)
    if redis.call('HDEL', VALS, k) == 1 then redis.call('ZREM', KEYS_Z, k) end
    i = i + 2
  elseif op == 'r' then
    local ks = redis.call('ZRANGE', KEYS_Z, ARGV[i + 1], ARGV[i + 2], 'BYLEX')
    for j = 1, #ks, 1000 do
      local chunk = {}
      for n = j, math.min(j + 999, #ks) do
        save(ks[n])
        chunk[#chunk + 1] = ks[n]
      end
      redis.call('HDEL', VALS, unpack(chunk))
    end
    if #ks > 0 then redis.call('ZREMRANGEBYLEX', KEYS_Z, ARGV[i + 1], ARGV[i + 2]) end
    i = i + 3
  else
    return redis.error_reply('ERR canopy: unknown batch operation ' .. tostring(op))
  end
end
redis.call('SET', REV, nxt)
-- Undo records no registered snapshot needs: those of revisions up to the oldest snapshot's.
local oldest = nxt
local first = redis.call('ZRANGE', SNAPS, 0, 0, 'WITHSCORES')
if #first > 0 then oldest = tonumber(first[2]) end
local low = tonumber(redis.call('GET', ULOW) or tostring(cur))
for r = low, oldest do redis.call('UNLINK', undo_hash(r), undo_keys(r)) end
if oldest + 1 > low then redis.call('SET', ULOW, oldest + 1) end
-- Listeners (other processes attached to the store) hear of the commit.
redis.call('PUBLISH', KEYS[1] .. ':commits', nxt)
return {'ok', tostring(nxt)}
