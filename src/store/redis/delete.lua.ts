import { CLOCK_LUA, DELETE_RECORD_LUA } from './write-ops.lua.js';

/**
 * delete — remove a record and its index entries; report whether a live record was there.
 *
 * The logic is `deleteRecord` (./write-ops.lua.ts), shared with the apply script.
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV[1]  key
 * Returns  1 when the record existed and had not expired (expiresAt > now), else 0.
 *
 * Atomic: the liveness check against `TIME` and the delete are one script, so two concurrent
 * deletes of one live record answer 1 exactly once. `TIME` before writes is fine: scripts
 * replicate by effects.
 */
export const DELETE_LUA = `${CLOCK_LUA}${DELETE_RECORD_LUA}
return deleteRecord(KEYS[1], ARGV[1])
`;
