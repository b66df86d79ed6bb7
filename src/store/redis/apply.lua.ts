import {
  CLOCK_LUA,
  DELETE_RECORD_IF_LUA,
  DELETE_RECORD_LUA,
  PUT_RECORD_LUA,
  RELEASE_LEASE_LUA,
} from './write-ops.lua.js';

/**
 * apply — a batch of record puts, record deletes and lease releases, in order, in one script call.
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV     quadruples, one per op, in order (validated by the caller):
 *            'p', key, value, ttlMs (whole number > 0, or 0 for "never expires")
 *            'd', key, '', ''
 *            'c', key, value, ''   (compare-and-delete: delete only if it holds exactly `value`)
 *            'r', key, token (decimal), holdUntil (store ms; 0 when not given)
 * Returns  { r_1, …, r_n }: per op, 1 or 0 — put 1; delete 1 when the record existed unexpired
 *          (compare-and-delete: and held exactly `value`; 0 writes nothing and fails nothing);
 *          release 1 when `token` still held the lease (see ./release.lua.ts).
 *
 * Each op runs the very function the single-op script runs (./write-ops.lua.ts), so a batched op
 * behaves exactly like its single call, fencing and holdUntil included; a key may repeat and later
 * ops see earlier ones' writes. All ops judge expiry at one store instant (`TIME`, read once, and
 * only if some op needs it).
 *
 * Atomic, all or nothing: Redis runs the script to completion with no other command in between,
 * and nothing in it fails halfway on data oncely wrote. Redis has no rollback, so the one way a
 * command could fail mid-script — a key under the prefix holding another program's data of the
 * wrong type (WRONGTYPE) — is probed for every key the batch reads (the four indexes, each
 * delete's and compare-and-delete's record, each release's lease) before anything is written; the script then fails with
 * WRONGTYPE having changed nothing. The probes are zero-length reads with commands the other
 * scripts already use (ZRANGEBYLEX … LIMIT 0 0, HGET, GET), so the documented ACL still suffices.
 * A put replaces its record key whatever it held, as put does, so a delete's record key is probed
 * only when no earlier put of the same key precedes it. Out of memory cannot split a batch either:
 * Redis refuses a write command under maxmemory only while the script has written nothing.
 */
export const APPLY_LUA = `${CLOCK_LUA}${PUT_RECORD_LUA}${DELETE_RECORD_LUA}${DELETE_RECORD_IF_LUA}${RELEASE_LEASE_LUA}
local base = KEYS[1]
-- Probes with commands the store already needs (no new ACL permission): each fails only on a key
-- of the wrong type, and pcall hands that failure back instead of ending the script.
local function wrongType(...)
  local reply = redis.pcall(...)
  if type(reply) == 'table' and reply.err then
    return 'WRONGTYPE apply: ' .. tostring(select(2, ...)) .. ' holds data of another type; nothing was applied'
  end
  return nil
end
local bad = nil
for _, index in ipairs({ 'recs', 'rec-exp', 'leases', 'lease-exp' }) do
  bad = bad or wrongType('ZRANGEBYLEX', base .. index, '-', '+', 'LIMIT', 0, 0)
end
if bad then return redis.error_reply(bad) end
local put = {}
for i = 1, #ARGV, 4 do
  local op, key = ARGV[i], ARGV[i + 1]
  if op == 'p' then
    put[key] = true
  elseif op == 'd' or op == 'c' then
    if not put[key] then bad = wrongType('HGET', base .. 'rec:' .. key, 'e') end
  elseif op == 'r' then
    bad = wrongType('GET', base .. 'lease:' .. key)
  else
    bad = 'ERR apply: unknown op ' .. tostring(op) .. '; nothing was applied'
  end
  if bad then return redis.error_reply(bad) end
end
local out = {}
for i = 1, #ARGV, 4 do
  local op, key = ARGV[i], ARGV[i + 1]
  if op == 'p' then
    putRecord(base, key, ARGV[i + 2], tonumber(ARGV[i + 3]))
    out[#out + 1] = 1
  elseif op == 'd' then
    out[#out + 1] = deleteRecord(base, key)
  elseif op == 'c' then
    out[#out + 1] = deleteRecordIf(base, key, ARGV[i + 2])
  else
    out[#out + 1] = releaseLease(base, key, ARGV[i + 2], tonumber(ARGV[i + 3]))
  end
end
return out
`;
