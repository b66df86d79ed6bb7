/**
 * put — create or replace a record, optionally with a time to live on the store clock.
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV[1]  key; ARGV[2] value; ARGV[3] ttlMs (whole number > 0, or 0 for "never expires")
 * Returns  the record's expiresAt (store ms), or -1 when it never expires.
 *
 * Writes `rec:<key>` as a hash { v = value, e = expiresAt } (no `e` without a ttl) with PXAT
 * expiresAt, the key-ordered index `recs` (score 0) and the expiry index `rec-exp` (score
 * expiresAt; removed for a record without ttl, so sweep never sees it).
 *
 * Atomic: the record and both index entries change together, so scan and sweep never see a
 * record without its index entries or with a stale expiry. `TIME` before writes is fine: scripts
 * replicate by effects.
 */
export const PUT_LUA = `
local base = KEYS[1]
local key = ARGV[1]
local recordKey = base .. 'rec:' .. key
local ttl = tonumber(ARGV[3])
redis.call('DEL', recordKey)
redis.call('ZADD', base .. 'recs', 0, key)
if ttl > 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local expires = string.format('%d', now + ttl)
  redis.call('HSET', recordKey, 'v', ARGV[2], 'e', expires)
  redis.call('PEXPIREAT', recordKey, expires)
  redis.call('ZADD', base .. 'rec-exp', expires, key)
  return now + ttl
end
redis.call('HSET', recordKey, 'v', ARGV[2])
redis.call('ZREM', base .. 'rec-exp', key)
return -1
`;
