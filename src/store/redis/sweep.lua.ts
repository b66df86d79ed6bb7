/**
 * sweep — delete at most `limit` expired leases and at most `limit` expired records.
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV[1]  limit (1..10000)
 * Returns  { leases, records }: how many of each were removed.
 *
 * The expiry indexes `lease-exp` and `rec-exp` (score = expiresAt) make the work bounded:
 * ZRANGEBYSCORE -inf now LIMIT 0 limit finds only what is due. A lease "removed" here may already
 * have been deleted by release() or by Redis' own expiry; its index entries are what is swept (the
 * memory store likewise counts released leases it still keeps). An entry whose lease or record is
 * live after all (a re-taken name keeps the lower score of an earlier lease, see acquire.lua.ts)
 * is re-scored to its current expiry, not deleted. The `fence` counter is never touched.
 *
 * Numbers are formatted with %d: Lua's default number-to-string keeps only 14 digits.
 *
 * Atomic: one script and one clock reading, so nothing granted or written concurrently is removed
 * by mistake. `TIME` before writes is fine: scripts replicate by effects.
 */
export const SWEEP_LUA = `
local base = KEYS[1]
local limit = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nowText = string.format('%d', now)

local leases = 0
local byExpiry = base .. 'lease-exp'
for _, key in ipairs(redis.call('ZRANGEBYSCORE', byExpiry, '-inf', nowText, 'LIMIT', 0, limit)) do
  local leaseKey = base .. 'lease:' .. key
  local current = redis.call('GET', leaseKey)
  local expires = current and tonumber(string.match(current, '^%d+'))
  if expires and expires > now then
    redis.call('ZADD', byExpiry, string.format('%d', expires), key)
  else
    if current then redis.call('DEL', leaseKey) end
    redis.call('ZREM', base .. 'leases', key)
    redis.call('ZREM', byExpiry, key)
    leases = leases + 1
  end
end

local records = 0
local recordsByExpiry = base .. 'rec-exp'
for _, key in ipairs(redis.call('ZRANGEBYSCORE', recordsByExpiry, '-inf', nowText, 'LIMIT', 0, limit)) do
  local recordKey = base .. 'rec:' .. key
  local record = redis.call('HMGET', recordKey, 'v', 'e')
  local expires = record[2] and tonumber(record[2])
  if record[1] and (not expires or expires > now) then
    if expires then
      redis.call('ZADD', recordsByExpiry, string.format('%d', expires), key)
    else
      redis.call('ZREM', recordsByExpiry, key)
    end
  else
    if record[1] then redis.call('DEL', recordKey) end
    redis.call('ZREM', base .. 'recs', key)
    redis.call('ZREM', recordsByExpiry, key)
    records = records + 1
  end
end

return { leases, records }
`;
