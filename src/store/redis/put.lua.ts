import { CLOCK_LUA, PUT_RECORD_LUA } from './write-ops.lua.js';

/**
 * put — create or replace a record, optionally with a time to live on the store clock.
 *
 * The logic is `putRecord` (./write-ops.lua.ts), shared with the apply script.
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
export const PUT_LUA = `${CLOCK_LUA}${PUT_RECORD_LUA}
return putRecord(KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]))
`;
