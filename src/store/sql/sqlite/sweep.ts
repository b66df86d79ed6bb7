import type { SweepResult } from '../../types.js';
import type { Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { SQLITE_NOW } from './clock.js';
import type { Prepared } from './driver.js';

/**
 * sweep (SQLite): three statements in one `BEGIN IMMEDIATE` transaction.
 *
 * Takes: limit. Returns: how many expired leases and records went (at most `limit` each).
 *
 * Leases are found through `sweep_at` (schema.ts), which grants and releases leave alone: among
 * the rows due (`sweep_at <= now`), at most `limit` still-live ones are first given
 * `sweep_at = expires_at` (looked at again when that lease ends), then at most `limit` expired
 * ones are deleted. A row's `sweep_at` is the end of its first lease, or of the lease sweep last
 * saw live in it, so an expired row waits for sweep at most that long (never longer than the
 * longest lease the key had); meanwhile it is invisible to every read, and a grant reuses it.
 * Records are found through their `expires_at` index, which every write of a record moves anyway.
 *
 * Why it is safe: the write lock is held throughout, so nothing is re-granted between choosing a
 * row and deleting it. Deleting a lease row never lowers a later token: the fence counter keeps
 * growing.
 */
export function sqliteSweep(t: Tables, prepared: Prepared): (limit: number) => Promise<SweepResult> {
  const due = `SELECT "key" FROM ${t.leases} WHERE sweep_at <= ${SQLITE_NOW} AND expires_at`;
  const rescore: Statement = {
    name: 'sweep_rescore',
    text: `UPDATE ${t.leases} SET sweep_at = expires_at WHERE "key" IN (${due} > ${SQLITE_NOW} LIMIT ?)`,
  };
  const leases: Statement = {
    name: 'sweep_leases',
    text: `DELETE FROM ${t.leases} WHERE "key" IN (${due} <= ${SQLITE_NOW} LIMIT ?)`,
  };
  const records: Statement = {
    name: 'sweep_records',
    text: `DELETE FROM ${t.records} WHERE "key" IN (SELECT "key" FROM ${t.records} WHERE expires_at <= ${SQLITE_NOW} LIMIT ?)`,
  };
  const transaction = prepared.db.transaction((limit: number): SweepResult => {
    prepared.get(rescore).run(limit);
    return {
      leases: prepared.get(leases).run(limit).changes,
      records: prepared.get(records).run(limit).changes,
    };
  });
  return async (limit) => transaction.immediate(limit);
}
