import { randomUUID } from 'node:crypto';
import mysql, { type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import { FLOOR_TABLE, type Floor, LEASE_MS } from './types.js';

// Assignments run left to right: `owner` is decided on the old `expires_at`, which changes last.
const ACQUIRE = `INSERT INTO ${FLOOR_TABLE} (k, owner, expires_at)
  VALUES (?, ?, NOW(3) + INTERVAL ? MICROSECOND)
  ON DUPLICATE KEY UPDATE
    owner = IF(expires_at <= NOW(3), VALUES(owner), owner),
    expires_at = IF(expires_at <= NOW(3), VALUES(expires_at), expires_at)`;
const RELEASE = `DELETE FROM ${FLOOR_TABLE} WHERE k = ? AND owner = ?`;

/**
 * A lease lock through `mysql2`: `INSERT … ON DUPLICATE KEY UPDATE` that only changes an expired row
 * (affectedRows 1 = inserted, 2 = taken over, 0 = held), then a conditional `DELETE`. The pool turns
 * off CLIENT_FOUND_ROWS so "held" (0) differs from "inserted" (1).
 */
export async function mysqlFloor(url: string, poolSize: number): Promise<Floor> {
  const pool = mysql.createPool({ uri: url, connectionLimit: poolSize, flags: ['-FOUND_ROWS'] });
  try {
    await pool.query(`DROP TABLE IF EXISTS ${FLOOR_TABLE}`);
    await pool.query(
      `CREATE TABLE ${FLOOR_TABLE} (
         k VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
         owner VARCHAR(255) NOT NULL,
         expires_at DATETIME(3) NOT NULL
       ) ENGINE = InnoDB`,
    );
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  const [rows] = await pool.query<RowDataPacket[]>('SELECT VERSION() AS v');
  const raw = String(rows[0]?.['v'] ?? '?');
  return {
    version: raw.includes('MariaDB') ? `MariaDB ${raw.split('-')[0]}` : `MySQL ${raw}`,
    async lock(name) {
      const owner = randomUUID();
      const [got] = await pool.execute<ResultSetHeader>(ACQUIRE, [name, owner, LEASE_MS * 1000]);
      if (got.affectedRows === 0) return false;
      const [gone] = await pool.execute<ResultSetHeader>(RELEASE, [name, owner]);
      if (gone.affectedRows !== 1) throw new Error(`mysql floor: lost ${name} before release`);
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
