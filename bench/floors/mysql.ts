import mysql, { type PoolConnection, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import { type Floor, type FloorOptions, LEASE_MS } from './types.js';

const NOW = 'UTC_TIMESTAMP(3)';

/**
 * A lease lock through `mysql2`, as you would write it by hand with oncely's semantics, every
 * statement through `execute` (server-side prepared, cached per connection).
 *
 * MariaDB (10.3+ has sequences): one `INSERT … ON DUPLICATE KEY UPDATE` whose update branch takes
 * the row only if its lease has expired and then draws `NEXTVAL(<fence>)` under the row lock (a new
 * name draws its token in VALUES). The token comes back as the OK packet's insert id through
 * `LAST_INSERT_ID(expr)` (0 = held). Assignments run left to right, so `owner` and `token` are
 * decided on the old `expires_at`, which changes last. Then one conditional `UPDATE` ends the lease.
 *
 * MySQL 8 (no sequences): the same upsert marks a taken row with token 0 (insert id 1 = taken),
 * then, in the same transaction and still holding the row, draws from a one-row counter and
 * writes the token.
 */
export async function mysqlFloor({ url, poolSize, table }: FloorOptions): Promise<Floor> {
  const fence = `${table}_fence`;
  const pool = mysql.createPool({ uri: url, connectionLimit: poolSize });
  let mariadb: boolean;
  let raw: string;
  try {
    const [rows] = await pool.query<RowDataPacket[]>('SELECT VERSION() AS v');
    raw = String(rows[0]?.['v'] ?? '?');
    mariadb = raw.includes('MariaDB');
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    await pool.query(mariadb ? `DROP SEQUENCE IF EXISTS ${fence}` : `DROP TABLE IF EXISTS ${fence}`);
    await pool.query(
      `CREATE TABLE ${table} (
         k VARBINARY(255) NOT NULL PRIMARY KEY,
         owner VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
         token BIGINT NOT NULL,
         expires_at DATETIME(3) NOT NULL
       ) ENGINE = InnoDB`,
    );
    if (mariadb) await pool.query(`CREATE SEQUENCE ${fence}`);
    else {
      await pool.query(`CREATE TABLE ${fence} (id INT PRIMARY KEY, v BIGINT NOT NULL) ENGINE = InnoDB`);
      await pool.query(`INSERT INTO ${fence} VALUES (1, 0)`);
    }
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  const expired = `expires_at <= ${NOW}`;
  const release = `UPDATE ${table} SET expires_at = ${NOW} WHERE k = ? AND token = ? AND expires_at > ${NOW}`;
  const lease = `${NOW} + INTERVAL ? MICROSECOND`;
  let acquire: (name: string) => Promise<number>;
  if (mariadb) {
    const upsert =
      `INSERT INTO ${table} (k, owner, token, expires_at) VALUES (?, ?, LAST_INSERT_ID(NEXTVAL(${fence})), ${lease}) ` +
      `ON DUPLICATE KEY UPDATE owner = IF(${expired}, VALUES(owner), owner), ` +
      `token = IF(${expired}, LAST_INSERT_ID(NEXTVAL(${fence})), token + 0 * LAST_INSERT_ID(0)), ` +
      `expires_at = IF(${expired}, VALUES(expires_at), expires_at)`;
    acquire = async (name) => {
      const [got] = await pool.execute<ResultSetHeader>(upsert, [name, 'bench-floor', LEASE_MS * 1000]);
      return Number(got.insertId);
    };
  } else {
    const upsert =
      `INSERT INTO ${table} (k, owner, token, expires_at) VALUES (?, ?, 0 * LAST_INSERT_ID(1), ${lease}) ` +
      `ON DUPLICATE KEY UPDATE owner = IF(${expired}, VALUES(owner), owner), ` +
      `token = IF(${expired}, 0, token + 0 * LAST_INSERT_ID(0)), ` +
      `expires_at = IF(${expired}, VALUES(expires_at), expires_at)`;
    acquire = async (name) => {
      const conn: PoolConnection = await pool.getConnection();
      try {
        await conn.query('START TRANSACTION');
        const [got] = await conn.execute<ResultSetHeader>(upsert, [name, 'bench-floor', LEASE_MS * 1000]);
        if (got.insertId === 0) {
          await conn.query('COMMIT');
          return 0;
        }
        await conn.execute(`UPDATE ${fence} SET v = LAST_INSERT_ID(v + 1) WHERE id = 1`);
        const [[row]] = await conn.execute<RowDataPacket[]>('SELECT LAST_INSERT_ID() AS t');
        await conn.execute(`UPDATE ${table} SET token = ? WHERE k = ?`, [row?.['t'], name]);
        await conn.query('COMMIT');
        return Number(row?.['t']);
      } catch (err) {
        await conn.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        conn.release();
      }
    };
  }
  return {
    version: mariadb ? `MariaDB ${raw.split('-')[0]}` : `MySQL ${raw}`,
    async lock(name) {
      const token = await acquire(name);
      if (token === 0) return false;
      const [gone] = await pool.execute<ResultSetHeader>(release, [name, token]);
      if (gone.affectedRows !== 1) throw new Error(`mysql floor: lost ${name} before release`);
      return true;
    },
    async roundTrip() {
      await pool.query('SELECT 1');
    },
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
      await pool
        .query(mariadb ? `DROP SEQUENCE IF EXISTS ${fence}` : `DROP TABLE IF EXISTS ${fence}`)
        .catch(() => {});
      await pool.end();
    },
  };
}
