/**
 * Lua building blocks shared by the put, delete, release, apply, acquire and claim-page scripts, so
 * a batched write runs exactly the logic of the single-op script. Not scripts themselves: each is a `local`
 * definition to be spliced, in this order, in front of a script body. Every function takes the
 * store's key base (`KEYS[1]`, `{<prefix>}`) as `base`.
 *
 * The clock is read lazily, at most once per script: a put without a ttl or a release by a stale
 * token never calls `TIME` (the hot paths stay as short as they were), and every op of one batch
 * judges expiry at the same store instant. `TIME` before writes is fine: scripts replicate by
 * effects (Redis >= 5 default, Redis 7 only mode). Numbers are formatted with %d: Lua's default
 * number-to-string keeps only 14 digits.
 */

/** `clock()`: Redis `TIME` in epoch ms, read on first use and then fixed for the script. */
export const CLOCK_LUA = `
local clockNow
local function clock()
  if not clockNow then
    local t = redis.call('TIME')
    clockNow = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clockNow
end
`;

/**
 * `putRecord(base, key, value, ttl)`: create or replace a record (ttl a whole number > 0, or 0 for
 * "never expires"); returns its expiresAt, or -1 when it never expires.
 *
 * Writes `rec:<key>` as a hash { v = value, e = expiresAt } (no `e` without a ttl) with PXAT
 * expiresAt, the key-ordered index `recs` (score 0) and the expiry index `rec-exp` (score
 * expiresAt; removed for a record without ttl, so sweep never sees it). The record and both index
 * entries change together, so scan and sweep never see a record without its index entries or with
 * a stale expiry.
 */
export const PUT_RECORD_LUA = `
local function putRecord(base, key, value, ttl)
  local recordKey = base .. 'rec:' .. key
  redis.call('DEL', recordKey)
  redis.call('ZADD', base .. 'recs', 0, key)
  if ttl > 0 then
    local now = clock()
    local expires = string.format('%d', now + ttl)
    redis.call('HSET', recordKey, 'v', value, 'e', expires)
    redis.call('PEXPIREAT', recordKey, expires)
    redis.call('ZADD', base .. 'rec-exp', expires, key)
    return now + ttl
  end
  redis.call('HSET', recordKey, 'v', value)
  redis.call('ZREM', base .. 'rec-exp', key)
  return -1
end
`;

/**
 * `deleteRecord(base, key)`: remove a record and its index entries; returns 1 when it existed and
 * had not expired (expiresAt > now), else 0. The liveness check and the delete happen together, so
 * two deletes of one live record answer 1 exactly once.
 */
export const DELETE_RECORD_LUA = `
local function deleteRecord(base, key)
  local recordKey = base .. 'rec:' .. key
  local expires = redis.call('HGET', recordKey, 'e')
  local existed = redis.call('DEL', recordKey) == 1
  redis.call('ZREM', base .. 'recs', key)
  redis.call('ZREM', base .. 'rec-exp', key)
  if not existed then return 0 end
  if expires and tonumber(expires) <= clock() then return 0 end
  return 1
end
`;

/**
 * \`deleteRecordIf(base, key, value)\`: compare-and-delete — remove the record (as deleteRecord)
 * only when it exists, has not expired and its value is exactly \`value\` (Lua compares the bytes);
 * returns 1 when it did, else 0 and writes nothing. \`value\` comes from ARGV, never from the
 * script text. The read and the delete are one script, so nothing can replace the record between
 * the compare and the delete.
 */
export const DELETE_RECORD_IF_LUA = `
local function deleteRecordIf(base, key, value)
  local fields = redis.call('HMGET', base .. 'rec:' .. key, 'v', 'e')
  if not fields[1] or fields[1] ~= value then return 0 end
  if fields[2] and tonumber(fields[2]) <= clock() then return 0 end
  return deleteRecord(base, key)
end
`;

/**
 * `releaseLease(base, key, token, hold)`: give a lease up if `token` (decimal text, compared as
 * the stored text) still holds it and it has not expired; `hold` is holdUntil in store ms (0 =
 * none). Returns 1 when released (or held until `hold`), 0 when the lease was already gone.
 *
 * hold > now: the lease value is rewritten with expiresAt = hold (PXAT hold) and its expiry-index
 * score moved, so the key stays taken until then (lockAtLeastFor, "done" markers). Otherwise the
 * lease key is deleted, so the key is free at once. Its index entries stay: a later acquire of the
 * same name reuses them (no ZADD on `leases`), list-leases skips entries without a live lease, and
 * sweep removes them once their old expiry has passed (counting them, as the memory store counts
 * released leases it still keeps). The hot path is three commands: GET, TIME, DEL. The token check,
 * the expiry check and the write are never split, so a holder whose lease expired and was
 * re-granted cannot release the new holder's lease; the token itself is never changed.
 */
export const RELEASE_LEASE_LUA = `
local function releaseLease(base, key, tokenText, hold)
  local leaseKey = base .. 'lease:' .. key
  local current = redis.call('GET', leaseKey)
  if not current then return 0 end
  local expires, token = string.match(current, '^(%d+)|(%d+)|')
  if token ~= tokenText then return 0 end
  local now = clock()
  if tonumber(expires) <= now then return 0 end
  if hold > now then
    local heldUntil = string.format('%d', hold)
    redis.call('SET', leaseKey, heldUntil .. string.sub(current, #expires + 1), 'PXAT', heldUntil)
    if redis.call('ZADD', base .. 'lease-exp', heldUntil, key) == 1 then redis.call('ZADD', base .. 'leases', 0, key) end
  else
    redis.call('DEL', leaseKey)
  end
  return 1
end
`;

/**
 * `leaseFree(base, key, now)` and `grantLease(base, key, owner, leaseMs, now, micros)`: the lease
 * grant of acquire (./acquire.lua.ts says why each write is as it is), shared with claim-page so a
 * page's lease is granted exactly as acquire grants one. `now` is the store time in ms and `micros`
 * the same `TIME` reading in µs (the fence counter's seed); call grantLease only when leaseFree
 * answered true in the same script. grantLease returns the new fencing token.
 *
 * A key is free when it has no lease or its lease's expiresAt <= now. The grant draws the token
 * from the store-wide counter `fence` (seeded with `micros` when INCR answers 1: the counter was
 * missing), writes `lease:<key>` = "expiresAt|token|acquiredAt|owner" with PXAT expiresAt, and the
 * key's `lease-exp` entry (ZADD LT), adding the `leases` entry only for a name never seen before.
 * Its first write is the INCR: a `fence` holding other data fails it before anything is written.
 */
export const GRANT_LEASE_LUA = `
local function leaseFree(base, key, now)
  local current = redis.call('GET', base .. 'lease:' .. key)
  return not (current and tonumber(string.match(current, '^%d+')) > now)
end
local function grantLease(base, key, owner, leaseMs, now, micros)
  local fence = base .. 'fence'
  local token = redis.call('INCR', fence)
  if token == 1 then
    token = micros
    redis.call('SET', fence, string.format('%d', token))
  end
  local expires = string.format('%d', now + leaseMs)
  redis.call('SET', base .. 'lease:' .. key,
    expires .. '|' .. string.format('%d', token) .. '|' .. string.format('%d', now) .. '|' .. owner, 'PXAT', expires)
  if redis.call('ZADD', base .. 'lease-exp', 'LT', expires, key) == 1 then redis.call('ZADD', base .. 'leases', 0, key) end
  return token
end
`;
