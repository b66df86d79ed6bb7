/**
 * inspect — the current holder of one key, judged on the store clock.
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV[1]  key
 * Returns  { token, acquiredAt, expiresAt, owner } when the lease is held (expiresAt > now), else nil.
 *
 * Read-only. A script (not a plain GET) because "held" means expiresAt > Redis `TIME`, and reading
 * the lease and the clock must happen at one instant: Redis' own key expiry keeps a key until the
 * millisecond after its PXAT, one millisecond longer than the lease lasts.
 */
export const INSPECT_LUA = `
local current = redis.call('GET', KEYS[1] .. 'lease:' .. ARGV[1])
if not current then return false end
local expires, token, acquired, owner = string.match(current, '^(%d+)|(%d+)|(%d+)|(.*)$')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(expires) <= now then return false end
return { tonumber(token), tonumber(acquired), tonumber(expires), owner }
`;
