/**
 * list-leases — unexpired leases whose key starts with a prefix, ascending by key (byte order).
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV[1]  lower bound for ZRANGEBYLEX (`[<prefix>`, or `-` for all keys)
 * ARGV[2]  upper bound (`(<prefixUpperBound>`, or `+`)
 * ARGV[3]  limit (1..10000)
 * Returns  a flat array, five entries per lease: key, token, acquiredAt, expiresAt, owner.
 *
 * Walks the key-ordered index `leases` (all scores 0, so ZRANGEBYLEX orders by memcmp = code
 * point order) in chunks, reading each lease key. Index entries whose lease is gone or expired
 * (released, or removed by Redis' own expiry before a sweep) are skipped and removed on the way
 * (with their `lease-exp` entry and any expired lease key), so the walk still returns up to
 * `limit` live leases and dead entries are paid for only once.
 *
 * Atomic: one script, one clock reading, so the list is a consistent snapshot. The walk is
 * bounded by `limit` plus the dead entries it removes. `TIME` before writes is fine: scripts
 * replicate by effects.
 */
export const LIST_LEASES_LUA = `
local base = KEYS[1]
local byKey = base .. 'leases'
local byExpiry = base .. 'lease-exp'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local low, high, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local out, found = {}, 0
while found < limit do
  local want = limit - found
  local members = redis.call('ZRANGEBYLEX', byKey, low, high, 'LIMIT', 0, want)
  for _, key in ipairs(members) do
    local leaseKey = base .. 'lease:' .. key
    local current = redis.call('GET', leaseKey)
    local expires, token, acquired, owner
    if current then
      expires, token, acquired, owner = string.match(current, '^(%d+)|(%d+)|(%d+)|(.*)$')
    end
    if current and tonumber(expires) > now then
      out[#out + 1] = key
      out[#out + 1] = tonumber(token)
      out[#out + 1] = tonumber(acquired)
      out[#out + 1] = tonumber(expires)
      out[#out + 1] = owner
      found = found + 1
    else
      if current then redis.call('DEL', leaseKey) end
      redis.call('ZREM', byKey, key)
      redis.call('ZREM', byExpiry, key)
    end
  end
  if #members < want then break end
  low = '(' .. members[#members]
end
return out
`;
