/**
 * now — the store clock: Redis `TIME` of the node that holds this store's keys, in epoch ms.
 *
 * KEYS[1]  the store's key base, `{<prefix>}` (only for routing: in a Redis Cluster a plain TIME
 *          would go to any node, whose clock may differ from the one the lease scripts read)
 * Returns  epoch milliseconds (integer).
 *
 * Read-only, touches no key. A script only so that the clock read is the same node's clock as the
 * one every lease decision uses.
 */
export const NOW_LUA = `
local t = redis.call('TIME')
return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;
