import { CLOCK_LUA, RELEASE_LEASE_LUA } from './write-ops.lua.js';

/**
 * release — give a lease up if `token` still holds it and it has not expired.
 *
 * The logic is `releaseLease` (./write-ops.lua.ts), shared with the apply script.
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
export const RELEASE_LUA = `${CLOCK_LUA}${RELEASE_LEASE_LUA}
return releaseLease(KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]))
`;
