import { GRANT_LEASE_LUA } from './write-ops.lua.js';

/**
 * claim-page — a lease and, only if it is granted, a page of record puts, put-if-absent creates
 * and compare-and-moves (Store.claimPage), in one script call, on one store instant.
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV[1]  the lease key; ARGV[2] owner; ARGV[3] leaseMs (whole number > 0)
 * ARGV[4…] quintuples, one per op, in order (validated by the caller; every record key — a put's
 *          or create's key, a move's from and to — at most once in the page):
 *            'p', key,  '', value, ttlMs   (put)
 *            'c', key,  '', value, ttlMs   (create: put-if-absent)
 *            'm', from, to, value, ttlMs   (move)
 *          ttlMs a whole number > 0, or 0 for "never expires".
 * Returns  { now, token, r_1, …, r_n }: the store time (Redis `TIME`, epoch ms) of the grant and of
 *          every write, the lease's new fencing token (0 when the key is held: then nothing was
 *          written and no r_i follows), and per op 1 or 0 — put 1; create 1 when no live record
 *          had the key (expiresAt <= now counts as absent); move 1 when a live record had `from`.
 *
 * The lease is granted by acquire's own functions (`leaseFree`, `grantLease` in
 * ./write-ops.lua.ts): free or expired keys only, the token from the store-wide `fence` counter, so
 * it is above every token this store granted before, for any key.
 *
 * Writes, kept in the layout putRecord and deleteRecord keep (./write-ops.lua.ts; count and scan
 * rely on it: `recs` holds every stored record's key, `rec-exp` exactly the records with a ttl,
 * scored by expiresAt), but batched over the page rather than repeated per op:
 *   - per written record (a put, a create that won, a move's `to`): one HSET `rec:<key>`
 *     { v, e? }, and PEXPIREAT when it has a ttl;
 *   - per page: one DEL of every key written over or moved away (a move's `from` and `to` — `to`
 *     unread, DEL of a missing key changes nothing —, each put's key, a create's key only when an
 *     expired hash still holds it), so HSET always writes a fresh hash (no stale `e`, no stale
 *     Redis expiry); one ZREM `recs` of the moved `from`s; one ZADD `recs` of the written keys;
 *     one ZADD `rec-exp` of the written keys with a ttl; one ZREM `rec-exp` of the written keys
 *     without one and of the moved `from`s that had one (an expired record's entry may outlive
 *     its hash, so a key written without ttl is always removed there).
 * So a move without ttl (the due-index case) is one HSET plus its share of four page-wide commands
 * (DEL; ZREM and ZADD on `recs`; ZREM on `rec-exp`) — measured: 1,009 write commands for a page of
 * 1,000 moves and a put, lease included, where apply's delete plus put costs seven per move; what
 * it changes is the minimum of this layout: the `from` hash gone, the `to` hash written, their two
 * `recs` entries. A ttl adds a PEXPIREAT per record and one ZADD `rec-exp` per page. A create that
 * loses and a move whose `from` is not live write nothing. The lease is acquire's INCR, SET and
 * ZADD, once per page.
 *
 * Atomic, all or nothing, one instant: Redis runs the script to completion with no other command
 * in between, and `TIME` is read once, so every liveness check and every expiry (`now + ttlMs`,
 * the lease's `acquiredAt` included) is on one store instant. Two pages racing for one `from` or
 * one create's key run one after the other: the second sees the first's write and answers 0, so
 * each item goes to exactly one page (key order does not matter: there are no locks). Keys are
 * distinct within a page, so every read (the lease, each create's and each move's `from` record)
 * is made before the first write without changing any result. Redis has no rollback; the only
 * failures a command could meet halfway — a key under the prefix holding another program's data
 * of the wrong type — are met before anything is written: the lease key and the records read are
 * read first, the four indexes are probed as apply probes them (ZRANGEBYLEX … LIMIT 0 0), the
 * first write is the fence INCR, and what follows only writes over keys whatever they hold (SET,
 * DEL, HSET on a deleted or missing key) or indexes already probed. Out of memory cannot split
 * the page either: Redis refuses a write under maxmemory only while the script has written
 * nothing. `TIME` before writes is fine: scripts replicate by effects. The page-wide commands
 * pass at most 4,000 arguments each through `unpack` (Lua's C stack allows 8,000); a page has at
 * most 1,000 ops, so each is one command.
 */
export const CLAIM_PAGE_LUA = `${GRANT_LEASE_LUA}
local base = KEYS[1]
local t = redis.call('TIME')
local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(micros / 1000)
if not leaseFree(base, ARGV[1], now) then return { now, 0 } end
for _, index in ipairs({ 'recs', 'rec-exp', 'leases', 'lease-exp' }) do
  local reply = redis.pcall('ZRANGEBYLEX', base .. index, '-', '+', 'LIMIT', 0, 0)
  if type(reply) == 'table' and reply.err then
    return redis.error_reply('WRONGTYPE claimPage: ' .. base .. index .. ' holds data of another type; nothing was applied')
  end
end
-- Reads and decisions: nothing is written yet.
local results, del, unindex, unexpire = {}, {}, {}, {}
local writeKeys, writeValues, writeExpiry = {}, {}, {}
local function live(key)
  local record = redis.call('HMGET', base .. 'rec:' .. key, 'v', 'e')
  return record[1] and (not record[2] or tonumber(record[2]) > now), record[1], record[2]
end
local function write(key, value, ttl)
  writeKeys[#writeKeys + 1] = key
  writeValues[#writeValues + 1] = value
  writeExpiry[#writeExpiry + 1] = ttl > 0 and string.format('%d', now + ttl) or false
end
for i = 4, #ARGV, 5 do
  local op, key, value, ttl = ARGV[i], ARGV[i + 1], ARGV[i + 3], tonumber(ARGV[i + 4])
  local won = 1
  if op == 'p' then
    del[#del + 1] = base .. 'rec:' .. key
    write(key, value, ttl)
  elseif op == 'c' then
    local alive, stored = live(key)
    if alive then
      won = 0
    else
      if stored then del[#del + 1] = base .. 'rec:' .. key end
      write(key, value, ttl)
    end
  elseif op == 'm' then
    local alive, _, expires = live(key)
    if alive then
      local to = ARGV[i + 2]
      del[#del + 1] = base .. 'rec:' .. key
      del[#del + 1] = base .. 'rec:' .. to
      unindex[#unindex + 1] = key
      if expires then unexpire[#unexpire + 1] = key end
      write(to, value, ttl)
    else
      won = 0
    end
  else
    return redis.error_reply('ERR claimPage: unknown op ' .. tostring(op) .. '; nothing was applied')
  end
  results[#results + 1] = won
end
-- Writes: the lease first (its INCR is the first write), then the records and their indexes.
local token = grantLease(base, ARGV[1], ARGV[2], tonumber(ARGV[3]), now, micros)
local function each(command, key, list)
  for i = 1, #list, 4000 do
    redis.call(command, key, unpack(list, i, math.min(i + 3999, #list)))
  end
end
for i = 1, #del, 4000 do
  redis.call('DEL', unpack(del, i, math.min(i + 3999, #del)))
end
local index, expiring = {}, {}
for i, key in ipairs(writeKeys) do
  local recordKey, expires = base .. 'rec:' .. key, writeExpiry[i]
  index[#index + 1] = 0
  index[#index + 1] = key
  if expires then
    redis.call('HSET', recordKey, 'v', writeValues[i], 'e', expires)
    redis.call('PEXPIREAT', recordKey, expires)
    expiring[#expiring + 1] = expires
    expiring[#expiring + 1] = key
  else
    redis.call('HSET', recordKey, 'v', writeValues[i])
    unexpire[#unexpire + 1] = key
  end
end
each('ZREM', base .. 'recs', unindex)
each('ZADD', base .. 'recs', index)
each('ZADD', base .. 'rec-exp', expiring)
each('ZREM', base .. 'rec-exp', unexpire)
local out = { now, token }
for i = 1, #results do out[i + 2] = results[i] end
return out
`;
