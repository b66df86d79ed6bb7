/**
 * count — how many live records have a key starting with a prefix, on the store clock; one call
 * of a count that may take several (the caller, RedisStore.doCount, loops).
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV[1]  ZRANGEBYLEX lower bound: `[<prefix>`, `-` for the empty prefix, or `(<cursor>` when
 *          going on with a walk of the range
 * ARGV[2]  upper bound: `(<prefixUpperBound>`, or `+` when there is none
 * ARGV[3]  the prefix itself ('' = every record)
 * ARGV[4]  index entries this call may walk at most (the walk budget, 1,000 from the caller)
 * ARGV[5]  '1' when going on with a walk of the range from the cursor in ARGV[1], else '0'
 * Returns  { n }: n live records, the last part of the answer (the whole of it in a first call);
 *          { n, key }: n live records in the range up to and including `key`, the budget spent:
 *                      go on after `key` (ARGV[1] = `(<key>`, ARGV[5] = '1') and add;
 *          { -1 }:     more expired, unswept records than the budget, and fewer than the range
 *                      holds: sweep a batch (./sweep.lua.ts) and ask again from the start.
 *
 * Why it is exact without reading the records: every write keeps the two record indexes in step
 * with the record (./write-ops.lua.ts; scan and sweep remove entries from both together), so
 *   - `recs` holds every stored record's key, live or expired-but-unswept, and nothing else;
 *   - `rec-exp` holds exactly the records with a ttl, scored by their expiresAt.
 * A record in `recs` is therefore dead exactly when its `rec-exp` score is <= now (Redis' own
 * expiry may have removed the hash already; its entries stay until scan or sweep), and
 *   count = ZLEXCOUNT(recs, range) - #{ rec-exp entries with score <= now in the range }.
 * (A key evicted by a maxmemory policy other than noeviction would still be counted; oncely
 * requires noeviction, see docs/redis.md.)
 *
 * Cost: one call walks at most ARGV[4] index entries, besides O(log N) for ZLEXCOUNT and ZCOUNT.
 * With R = records in the range and E = expired records not yet swept in the whole store (sweep
 * keeps E small: it removes what is due in bounded batches):
 *   - E = 0, or the empty prefix: one call, no walk (ZLEXCOUNT - ZCOUNT).
 *   - min(E, R) <= budget: one call walking the smaller side: the E expired entries by rank
 *     (ZRANGE 0..E-1 of `rec-exp`, ascending scores, so exactly the expired ones) testing the
 *     key's bytes against the prefix, or the R range entries asking `rec-exp` for their scores.
 *   - R <= E, R > budget: the range is walked by key cursor, `budget` entries a call (read-only).
 *   - E < R, E > budget: the caller sweeps the expired records, `budget` a call (work the sweeper
 *     owes anyway), until E fits one call.
 * One script used to walk all min(E, R) entries: with 200,000 expired, unswept records a count
 * held Redis ~120 ms, serving no other client (about 0.5 µs per walked entry); now a call walks
 * ~1,000 (well under a millisecond) and other clients are served between calls.
 *
 * Atomic per call: one script and one clock reading. A count answered in one call (every case
 * but a range walk over several calls) is one consistent snapshot, sweeps before it included
 * (they remove only what had expired). A range walk over several calls is not a snapshot: each
 * key is counted at most once, as it was when its call walked it, so records written, deleted or
 * expiring meanwhile may or may not be counted; with nothing changing, the sum is exact.
 */
export const COUNT_LUA = `
local base = KEYS[1]
local byKey = base .. 'recs'
local byExpiry = base .. 'rec-exp'
local low, high, prefix = ARGV[1], ARGV[2], ARGV[3]
local budget, resuming = tonumber(ARGV[4]), ARGV[5] == '1'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local chunk = 1000

-- Live records among at most budget range entries from lower bound from.
local function walkRange(from)
  local live, walked = 0, 0
  while walked < budget do
    local want = math.min(chunk, budget - walked)
    local members = redis.call('ZRANGEBYLEX', byKey, from, high, 'LIMIT', 0, want)
    if #members == 0 then return { live } end
    walked = walked + #members
    local scores = redis.call('ZMSCORE', byExpiry, unpack(members))
    for i = 1, #members do
      local score = scores[i]
      if not score or tonumber(score) > now then live = live + 1 end
    end
    if #members < want then return { live } end
    from = '(' .. members[#members]
  end
  return { live, string.sub(from, 2) }
end

if resuming then return walkRange(low) end
local inRange = redis.call('ZLEXCOUNT', byKey, low, high)
if inRange == 0 then return { 0 } end
local expired = redis.call('ZCOUNT', byExpiry, '-inf', string.format('%d', now))
if expired == 0 then return { inRange } end
if prefix == '' then return { inRange - expired } end
if expired > inRange then return walkRange(low) end
if expired > budget then return { -1 } end
local n = #prefix
local dead = 0
for start = 0, expired - 1, chunk do
  local stop = math.min(start + chunk, expired) - 1
  local members = redis.call('ZRANGE', byExpiry, start, stop)
  for i = 1, #members do
    if string.sub(members[i], 1, n) == prefix then dead = dead + 1 end
  end
end
return { inRange - dead }
`;
