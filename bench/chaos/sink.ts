/**
 * The fenced effects sink the chaos nodes write to, on the same server as the store: a write for
 * a resource (one occurrence) is accepted only when its token is higher than the last accepted
 * one, and every decision is appended to a log, in decision order, for the history checker.
 * Each backend decides and logs in one statement / one script, so no interleaving can split them.
 */
import type { FencedWrite } from '../../src/testing/index.js';

export interface FencedSink {
  /** True when accepted; rejects when the server could not be reached. */
  write(resource: string, token: number): Promise<boolean>;
  /** Every decision so far, in the order the server made them. */
  log(): Promise<FencedWrite[]>;
  close(): Promise<void>;
}

// Takes $1 resource, $2 token. The upsert's row lock orders writers of one resource, and the log
// row is inserted by the same statement after it, so the log's seq order is the decision order.
const PG_WRITE = `
WITH up AS (
  INSERT INTO chaos_effects (resource, token) VALUES ($1, $2)
  ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token WHERE chaos_effects.token < EXCLUDED.token
  RETURNING 1
)
INSERT INTO chaos_writes (resource, token, accepted) SELECT $1, $2, EXISTS (SELECT 1 FROM up)
RETURNING accepted`;

// KEYS[1] the hash of last accepted tokens, KEYS[2] the decision log; ARGV[1] resource,
// ARGV[2] token. Returns 1 when accepted. A script runs alone on the server: decide + log is atomic.
const REDIS_WRITE = `
local last = redis.call('HGET', KEYS[1], ARGV[1])
local ok = (last == false) or (tonumber(ARGV[2]) > tonumber(last))
if ok then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
redis.call('RPUSH', KEYS[2], cjson.encode({ARGV[1], ARGV[2], ok}))
if ok then return 1 else return 0 end`;

export async function openSink(url: string): Promise<FencedSink> {
  if (url.startsWith('redis')) {
    const { Redis } = await import('ioredis');
    const client = new Redis(url, {
      maxRetriesPerRequest: 1,
      commandTimeout: 2000,
      connectTimeout: 2000,
      lazyConnect: true,
    });
    client.on('error', () => {});
    await client.connect();
    return {
      async write(resource, token) {
        return (await client.eval(REDIS_WRITE, 2, 'chaos:effects', 'chaos:writes', resource, token)) === 1;
      },
      async log() {
        const raw = await client.lrange('chaos:writes', 0, -1);
        return raw.map((r) => {
          // The token is logged as the text it came as: cjson writes numbers with 14 significant
          // digits, and Redis tokens have 16 (two grants a few apart logged as one token: a
          // 10-minute soak reported an accepted "equal" token that was one higher).
          const [resource, token, accepted] = JSON.parse(r) as [string, string, boolean];
          return { resource, token: Number(token), accepted };
        });
      },
      close: async () => {
        client.disconnect();
      },
    };
  }
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({
    connectionString: url,
    max: 2,
    connectionTimeoutMillis: 2000,
    query_timeout: 2000,
  });
  pool.on('error', () => {});
  await pool.query(`CREATE TABLE IF NOT EXISTS chaos_effects (resource text PRIMARY KEY, token bigint NOT NULL);
    CREATE TABLE IF NOT EXISTS chaos_writes (seq bigserial PRIMARY KEY, resource text NOT NULL, token bigint NOT NULL, accepted boolean NOT NULL)`);
  return {
    async write(resource, token) {
      const r = await pool.query<{ accepted: boolean }>(PG_WRITE, [resource, token]);
      return r.rows[0]!.accepted;
    },
    async log() {
      const r = await pool.query<{ resource: string; token: string; accepted: boolean }>(
        'SELECT resource, token, accepted FROM chaos_writes ORDER BY seq',
      );
      return r.rows.map((w) => ({ resource: w.resource, token: Number(w.token), accepted: w.accepted }));
    },
    close: () => pool.end(),
  };
}
