import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { FLOOR_TABLE, type Floor, LEASE_MS } from './types.js';

const ACQUIRE = `INSERT INTO ${FLOOR_TABLE} (key, owner, expires_at)
  VALUES ($1, $2, now() + $3::double precision * interval '1 millisecond')
  ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
  WHERE ${FLOOR_TABLE}.expires_at <= now()
  RETURNING key`;
const RELEASE = `DELETE FROM ${FLOOR_TABLE} WHERE key = $1 AND owner = $2`;

/** A lease lock through `pg`: `INSERT … ON CONFLICT DO UPDATE … WHERE expired RETURNING`, then a conditional `DELETE`. */
export async function postgresFloor(url: string, poolSize: number): Promise<Floor> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on('error', () => {}); // an idle connection dying must not crash the bench
  try {
    await pool.query(`DROP TABLE IF EXISTS ${FLOOR_TABLE}`);
    await pool.query(
      `CREATE TABLE ${FLOOR_TABLE} (key text PRIMARY KEY, owner text NOT NULL, expires_at timestamptz NOT NULL)`,
    );
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  const { rows } = await pool.query<{ version: string }>('SELECT version()');
  return {
    version: /^PostgreSQL [^ ,]+/.exec(rows[0]?.version ?? '')?.[0] ?? rows[0]?.version ?? '?',
    async lock(name) {
      const owner = randomUUID();
      const got = await pool.query(ACQUIRE, [name, owner, LEASE_MS]);
      if (got.rowCount !== 1) return false;
      const gone = await pool.query(RELEASE, [name, owner]);
      if (gone.rowCount !== 1) throw new Error(`postgres floor: lost ${name} before release`);
      return true;
    },
    async roundTrip() {
      await pool.query('SELECT 1');
    },
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${FLOOR_TABLE}`).catch(() => {});
      await pool.end();
    },
  };
}
