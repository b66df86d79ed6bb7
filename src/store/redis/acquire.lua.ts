import { GRANT_LEASE_LUA } from './write-ops.lua.js';

/**
 * acquire — lease every free or expired key of a batch, in one script call.
 *
 * KEYS[1]  the store's key base, `{<prefix>}` (every other key is built from it, see ../redis.ts)
 * ARGV     triples: key, owner, leaseMs (leaseMs a whole number > 0), one per requested key;
 *          keys are distinct (BaseStore removes repeats before calling).
 * Returns  { now, token_1, …, token_n }: the store time of the grant (Redis `TIME`, epoch ms) and,
 *          per key in order, the new fencing token, or 0 when the key is held (expiry > now).
 *
 * Writes per granted key: `lease:<key>` = "expiresAt|token|acquiredAt|owner" with PXAT expiresAt,
 * and the key's entry in the expiry index `lease-exp`. `lease-exp` and the key-ordered index
 * `leases` (score 0) always hold the same members (added together here, removed together only by
 * sweep and list-leases), so `leases` is written only when ZADD reports a new `lease-exp` member:
 * re-taking a name that was used before — the common case — costs no second ZADD. The score is
 * set with LT: a new member gets its lease's end, an existing one only moves earlier, never later
 * — re-taking a name with the usual lease length leaves the index untouched (a lookup, not a
 * rewrite). So a live lease's score is at most its expiresAt; sweep finds it no later than its end
 * and, if it is live after all, moves its score to its current expiresAt (sweep.lua.ts).
 *
 * The token comes from the store-wide counter `fence` (never expires, never swept). If `fence` is
 * missing (first use, or the data set was lost: restart without persistence, FLUSHDB) INCR
 * answers 1; the counter is then seeded with the server time in microseconds, so tokens issued
 * after a loss are still larger than every token issued before it (assuming fewer than one grant
 * per microsecond on average since the previous seed — Redis serves far fewer — and no backward
 * step of the server clock). A seed in ms × 1000 was not enough: a wipe within the millisecond of
 * the seed re-issued the same numbers. µs since the epoch stay below 2^53 until the year 2255. A failover to a
 * lagging replica leaves a stale counter, not a missing one: see docs/redis.md.
 *
 * Atomic: Redis runs a script to completion with no other command in between, so "is it free?"
 * and "take it" cannot be split by another client. `TIME` before writes is allowed because scripts
 * are replicated by their effects (the default since Redis 5, the only mode since Redis 7): replicas
 * receive the SET/ZADD commands with the computed values, never the script.
 * Numbers are formatted with %d: Lua's default number-to-string keeps only 14 digits. The grant
 * itself is `leaseFree` + `grantLease` (./write-ops.lua.ts), shared with claim-page.
 */
export const ACQUIRE_LUA = `${GRANT_LEASE_LUA}
local base = KEYS[1]
local t = redis.call('TIME')
local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(micros / 1000)
local out = { now }
for i = 1, #ARGV, 3 do
  local key = ARGV[i]
  if leaseFree(base, key, now) then
    out[#out + 1] = grantLease(base, key, ARGV[i + 1], tonumber(ARGV[i + 2]), now, micros)
  else
    out[#out + 1] = 0
  end
end
return out
`;
