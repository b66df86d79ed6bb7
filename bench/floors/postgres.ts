import pg from 'pg';
import { type Floor, type FloorOptions, LEASE_MS } from './types.js';

/**
 * A lease lock through `pg`, as you would write it by hand with oncely's semantics: one named
 * `INSERT … ON CONFLICT DO UPDATE … WHERE expires_at <= now() RETURNING token` (a new name draws
 * its token from a sequence; a takeover draws a fresh one in the DO UPDATE, under the row lock),
 * then one named conditional `UPDATE` that ends the lease (row kept). Named statements are parsed
 * and planned once per connection.
 */
export async function postgresFloor({ url, poolSize, table }: FloorOptions): Promise<Floor> {
  const fence = `${table}_fence`;
  const acquire = {
    name: `${table}_acquire`,
    text: `INSERT INTO ${table} (key, owner, token, expires_at)
      VALUES ($1, $2, nextval('${fence}'), now() + $3 * interval '1 millisecond')
      ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, token = nextval('${fence}'), expires_at = EXCLUDED.expires_at
      WHERE ${table}.expires_at <= now()
      RETURNING token`,
  };
  const release = {
    name: `${table}_release`,
    text: `UPDATE ${table} SET expires_at = now() WHERE key = $1 AND token = $2 AND expires_at > now()`,
  };
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on('error', () => {}); // an idle connection dying must not crash the bench
  try {
    await pool.query(`DROP TABLE IF EXISTS ${table}; DROP SEQUENCE IF EXISTS ${fence}`);
    await pool.query(
      `CREATE SEQUENCE ${fence}; ` +
        `CREATE TABLE ${table} (key text PRIMARY KEY, owner text NOT NULL, token bigint NOT NULL, expires_at timestamptz NOT NULL)`,
    );
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  const { rows } = await pool.query<{ version: string }>('SELECT version()');
  return {
    version: /^PostgreSQL [^ ,]+/.exec(rows[0]?.version ?? '')?.[0] ?? rows[0]?.version ?? '?',
    async lock(name) {
      const got = await pool.query<{ token: string }>({
        ...acquire,
        values: [name, 'bench-floor', LEASE_MS],
      });
      const token = got.rows[0]?.token;
      if (token === undefined) return false;
      const gone = await pool.query({ ...release, values: [name, token] });
      if (gone.rowCount !== 1) throw new Error(`postgres floor: lost ${name} before release`);
      return true;
    },
    async roundTrip() {
      await pool.query('SELECT 1');
    },
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${table}; DROP SEQUENCE IF EXISTS ${fence}`).catch(() => {});
      await pool.end();
    },
  };
}
