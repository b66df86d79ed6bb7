/**
 * delete — remove a record and its index entries; report whether a live record was there.
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV[1]  key
 * Returns  1 when the record existed and had not expired (expiresAt > now), else 0.
 *
 * Atomic: the liveness check against `TIME` and the delete are one script, so two concurrent
 * deletes of one live record answer 1 exactly once. `TIME` before writes is fine: scripts
 * replicate by effects.
 */
export const DELETE_LUA = `
local base = KEYS[1]
local key = ARGV[1]
local recordKey = base .. 'rec:' .. key
local expires = redis.call('HGET', recordKey, 'e')
local existed = redis.call('DEL', recordKey) == 1
redis.call('ZREM', base .. 'recs', key)
redis.call('ZREM', base .. 'rec-exp', key)
if not existed then return 0 end
if expires then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if tonumber(expires) <= now then return 0 end
end
return 1
`;
