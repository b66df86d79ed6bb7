/**
 * scan — live records whose key starts with a prefix, in key (byte) order or reversed, from a cursor.
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV[1]  ZRANGEBYLEX lower bound: `[<prefix>`, `(<after>` or `-`
 * ARGV[2]  upper bound: `(<prefixUpperBound>`, `(<after>` or `+`
 * ARGV[3]  limit (1..10000); ARGV[4] '1' for descending order, '0' for ascending
 * ARGV[5]  dead entries this call may walk past at most (the walk budget beyond `limit`)
 * Returns  a flat array, three entries per record: key, value, expiresAt (store ms, -1 = never);
 *          and, when the budget ran out before `limit` live records were found, one more entry:
 *          the last index key walked, from which the caller goes on in another call.
 *
 * Walks the key-ordered index `recs` (all scores 0: ZRANGEBYLEX/ZREVRANGEBYLEX order by memcmp =
 * code point order) in chunks, reading each record hash. Entries whose record is gone (removed by
 * Redis' own expiry) or expired are skipped and removed on the way, with their `rec-exp` entry, so
 * up to `limit` live records are returned and each dead entry is paid for once. The cursor
 * (`after`, exclusive) is folded into the bounds by the caller. One call walks at most `limit` +
 * ARGV[5] index entries: 200,000 expired, unswept records once held Redis for 1.9 s in one
 * `scan('hist|', { limit: 1 })`, serving no other client; now the caller walks them in calls of a
 * bounded size, other clients served in between (and the sweeper takes the rest).
 *
 * Atomic: one script and one clock reading, so what one call returns is a consistent snapshot
 * (a page that crossed a long dead stretch is several calls, as pages of a cursor are). `TIME`
 * before writes is fine: scripts replicate by effects.
 */
export const SCAN_LUA = `
local base = KEYS[1]
local byKey = base .. 'recs'
local byExpiry = base .. 'rec-exp'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local low, high, limit, reverse = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1'
local budget = limit + tonumber(ARGV[5])
local out, found, walked = {}, 0, 0
while found < limit do
  if walked >= budget then
    out[#out + 1] = reverse and string.sub(high, 2) or string.sub(low, 2)
    return out
  end
  local want = math.min(limit - found, budget - walked)
  local members
  if reverse then
    members = redis.call('ZREVRANGEBYLEX', byKey, high, low, 'LIMIT', 0, want)
  else
    members = redis.call('ZRANGEBYLEX', byKey, low, high, 'LIMIT', 0, want)
  end
  walked = walked + #members
  for _, key in ipairs(members) do
    local recordKey = base .. 'rec:' .. key
    local record = redis.call('HMGET', recordKey, 'v', 'e')
    local expires = record[2] and tonumber(record[2])
    if record[1] and (not expires or expires > now) then
      out[#out + 1] = key
      out[#out + 1] = record[1]
      out[#out + 1] = expires or -1
      found = found + 1
    else
      if record[1] then redis.call('DEL', recordKey) end
      redis.call('ZREM', byKey, key)
      redis.call('ZREM', byExpiry, key)
    end
  end
  if #members < want then break end
  if reverse then high = '(' .. members[#members] else low = '(' .. members[#members] end
end
return out
`;
