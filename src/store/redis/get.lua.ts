/**
 * get — a record's value, if it exists and has not expired on the store clock.
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV[1]  key
 * Returns  the value, or nil when the record is absent or expired (expiresAt <= now).
 *
 * Read-only. A script because "expired" is judged against Redis `TIME` at the same instant as the
 * read (Redis' own expiry keeps the key one millisecond longer); the clock is read only for
 * records that have a ttl.
 */
export const GET_LUA = `
local record = redis.call('HMGET', KEYS[1] .. 'rec:' .. ARGV[1], 'v', 'e')
if not record[1] then return false end
if record[2] then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if tonumber(record[2]) <= now then return false end
end
return record[1]
`;
