import type { SweepResult } from '../../types.js';
import type { Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { SQLITE_NOW } from './clock.js';
import type { Prepared } from './driver.js';

/**
 * sweep (SQLite): two DELETEs in one `BEGIN IMMEDIATE` transaction.
 *
 * Takes: limit. Returns: how many expired leases and records went (at most `limit` each).
 *
 * Why it is safe: the write lock is held throughout, so nothing is re-granted between choosing a
 * row and deleting it. Deleting a lease row never lowers a later token: the fence counter keeps
 * growing.
 */
export function sqliteSweep(t: Tables, prepared: Prepared): (limit: number) => Promise<SweepResult> {
  const expired = (table: string): Statement => ({
    name: `sweep_${table}`,
    text: `DELETE FROM ${table} WHERE "key" IN (SELECT "key" FROM ${table} WHERE expires_at <= ${SQLITE_NOW} LIMIT ?)`,
  });
  const leases = expired(t.leases);
  const records = expired(t.records);
  const transaction = prepared.db.transaction(
    (limit: number): SweepResult => ({
      leases: prepared.get(leases).run(limit).changes,
      records: prepared.get(records).run(limit).changes,
    }),
  );
  return async (limit) => transaction.immediate(limit);
}
