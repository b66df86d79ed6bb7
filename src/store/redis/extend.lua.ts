/**
 * extend — move a held lease's end to max(expiresAt, now + leaseMs), only for the token that
 * holds it. Never shortens: a late extend must not cut a release's hold (lockAtLeastFor, "done")
 * short (see Store.extend).
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV[1]  key; ARGV[2] token (decimal); ARGV[3] leaseMs (whole number > 0)
 * Returns  the new expiresAt (store ms), or nil when the lease is gone (expired, released, or held
 *          by another token).
 *
 * Rewrites `lease:<key>` with the new expiry (PXAT) and moves its `lease-exp` score; the token,
 * acquiredAt and owner are kept. When the lease already runs past now + leaseMs nothing is written.
 *
 * Atomic: the token check, the "not expired yet" check against `TIME` and the write are one script,
 * so an expired lease is never revived, even if nobody took it over. `TIME` before writes is fine:
 * scripts replicate by effects (Redis >= 5 default, Redis 7 only mode).
 */
export const EXTEND_LUA = `
local base = KEYS[1]
local key = ARGV[1]
local leaseKey = base .. 'lease:' .. key
local current = redis.call('GET', leaseKey)
if not current then return false end
local expires, token = string.match(current, '^(%d+)|(%d+)|')
if token ~= ARGV[2] then return false end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(expires) <= now then return false end
local newExpiry = now + tonumber(ARGV[3])
if newExpiry <= tonumber(expires) then return tonumber(expires) end
local text = string.format('%d', newExpiry)
redis.call('SET', leaseKey, text .. string.sub(current, #expires + 1), 'PXAT', text)
if redis.call('ZADD', base .. 'lease-exp', text, key) == 1 then redis.call('ZADD', base .. 'leases', 0, key) end
return newExpiry
`;
