/**
 * get-many — the values of a batch of records, each if it exists and has not expired, in one call.
 *
 * KEYS[1]  the store's key base, `{<prefix>}`
 * ARGV     the keys (1..1000, distinct: BaseStore answers repeats from the first read)
 * Returns  { v_1, …, v_n }: per key in order, the value, or nil when the record is absent or
 *          expired (expiresAt <= now).
 *
 * Reads what get reads (./get.lua.ts), key by key: the record hash's `v` and `e`. Read-only. One
 * script, so the whole batch is one round trip and one snapshot; expiry is judged against Redis
 * `TIME`, read once (only if some record has a ttl), not against Redis' own expiry, which keeps a
 * key one millisecond longer. Lua `false` in the reply table becomes a nil bulk reply.
 */
export const GET_MANY_LUA = `
local base = KEYS[1]
local now
local out = {}
for i, key in ipairs(ARGV) do
  local record = redis.call('HMGET', base .. 'rec:' .. key, 'v', 'e')
  local value = record[1]
  if value and record[2] then
    if not now then
      local t = redis.call('TIME')
      now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    if tonumber(record[2]) <= now then value = false end
  end
  out[i] = value
end
return out
`;
