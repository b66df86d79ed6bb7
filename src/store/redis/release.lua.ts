/**
 * release — give a lease up if `token` still holds it and it has not expired.
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV[1]  key; ARGV[2] token (decimal); ARGV[3] holdUntil (store ms; 0 when not given)
 * Returns  1 when the lease was held by `token` and is now released (or held until holdUntil),
 *          0 when it was already gone (expired, released, or taken over by another token).
 *
 * holdUntil > now: the lease value is rewritten with expiresAt = holdUntil (PXAT holdUntil) and its
 * expiry-index score moved, so the key stays taken until then (lockAtLeastFor, "done" markers).
 * Otherwise the lease key is deleted, so the key is free at once. Its index entries stay: a
 * later acquire of the same name reuses them (no ZADD on `leases`), list-leases skips entries
 * without a live lease, and sweep removes them once their old expiry has passed (counting them,
 * as the memory store counts released leases it still keeps). This keeps the hot path at three
 * commands: GET, TIME, DEL.
 *
 * Atomic: the token check, the expiry check against `TIME` and the write run inside one script, so
 * a holder whose lease expired and was re-granted cannot release the new holder's lease.
 * `TIME` before writes is fine: scripts replicate by effects (Redis >= 5 default, Redis 7 only mode).
 */
export const RELEASE_LUA = `
local base = KEYS[1]
local key = ARGV[1]
local leaseKey = base .. 'lease:' .. key
local current = redis.call('GET', leaseKey)
if not current then return 0 end
local expires, token = string.match(current, '^(%d+)|(%d+)|')
if token ~= ARGV[2] then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(expires) <= now then return 0 end
local hold = tonumber(ARGV[3])
if hold > now then
  local heldUntil = string.format('%d', hold)
  redis.call('SET', leaseKey, heldUntil .. string.sub(current, #expires + 1), 'PXAT', heldUntil)
  if redis.call('ZADD', base .. 'lease-exp', heldUntil, key) == 1 then redis.call('ZADD', base .. 'leases', 0, key) end
else
  redis.call('DEL', leaseKey)
end
return 1
`;
