-- Shared by every script: KEYS[1] is the store's prefix `{p}`; its keys are
-- `{p}:k` (sorted set of keys, all scored 0: ordered bytewise), `{p}:v` (hash
-- key -> value), `{p}:rev` (the revision), `{p}:snaps` and `{p}:snapdl`
-- (registered snapshots: id -> revision, id -> deadline in ms), and per
-- revision r `{p}:u:r` (hash key -> the key's state before r: 'n' absent,
-- 'v'..value) and `{p}:uk:r` (sorted set of those keys), kept while a
-- registered snapshot is older than r; `{p}:ulow` is the lowest revision
-- whose undo records may still exist.
local p = KEYS[1]
local KEYS_Z, VALS, REV = p .. ':k', p .. ':v', p .. ':rev'
local SNAPS, SNAPDL, ULOW = p .. ':snaps', p .. ':snapdl', p .. ':ulow'
local function undo_hash(r) return p .. ':u:' .. r end
local function undo_keys(r) return p .. ':uk:' .. r end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function revision() return tonumber(redis.call('GET', REV) or '0') end
local function expire_snapshots()
  local dead = redis.call('ZRANGEBYSCORE', SNAPDL, '-inf', now_ms())
  for _, id in ipairs(dead) do
    redis.call('ZREM', SNAPS, id)
    redis.call('ZREM', SNAPDL, id)
  end
end
-- Whether snapshot `id` is still registered (its undo records kept); extends its lease.
local function keep_alive(id, ttl)
  if not redis.call('ZSCORE', SNAPS, id) then return false end
  redis.call('ZADD', SNAPDL, 'XX', now_ms() + ttl, id)
  return true
end
local EXPIRED = 'EXPIRED the snapshot was not used for longer than its lease and its records are gone'
-- A write's reads are not registered (id ''): once the store moved on, its commit
-- would conflict anyway.
local MOVED_ON = 'CONFLICT the store moved on while a write read it'
-- The value `key` had at revision r0 (false: absent), `cur` being the current revision.
local function value_at(key, r0, cur)
  for r = r0 + 1, cur do
    local old = redis.call('HGET', undo_hash(r), key)
    if old then
      if old == 'n' then return false end
      return string.sub(old, 2)
    end
  end
  return redis.call('HGET', VALS, key)
end
-- Bytewise order (Lua's own string order follows the server's locale).
local function less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
