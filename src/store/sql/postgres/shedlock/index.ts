import { createHash } from 'node:crypto';
import { OncelyError } from '../../../../core/errors.js';
import type { Run } from '../../dialect.js';
import { checkShedlockLayout, columnsOf } from '../../shedlock/layout.js';
import type { ShedlockOps } from '../../shedlock/ops.js';
import type { ShedlockTableName } from '../../shedlock/table-name.js';
import type { Tables } from '../../tables.js';
import type { PgPoolLike } from '../pool.js';
import { pgShedlockAcquire } from './acquire.js';
import { pgShedlockExtend } from './extend.js';
import { pgShedlockRelease } from './release.js';
import { PG_SHEDLOCK_COLUMNS, PG_SHEDLOCK_TIME_TYPES, pgShedlockDdl, pgShedlockMigration } from './schema.js';

/**
 * ShedLock-table locks on PostgreSQL. Prepared statement names are unique per prefix and table
 * (a short hash of the quoted name: stores of one prefix with different tables may share a pool).
 */
export function pgShedlock(table: ShedlockTableName, t: Tables, run: Run, pool: PgPoolLike): ShedlockOps {
  const tag = createHash('sha256').update(table.sql).digest('hex').slice(0, 8);
  const named = (op: string) => `${t.prefix}shedlock_${tag}_${op}`;
  const columns = async () =>
    columnsOf((await pool.query({ text: PG_SHEDLOCK_COLUMNS, values: [table.sql] })).rows);
  return {
    table,
    acquire: pgShedlockAcquire(table, t, named('acquire'), run),
    extend: pgShedlockExtend(table, named('extend'), run),
    release: pgShedlockRelease(table, named('release'), run),
    async migrate() {
      let found = await columns();
      if (found.length === 0) {
        try {
          await pool.query({ text: pgShedlockMigration(table) });
        } catch (err) {
          // invalid_schema_name: oncely creates the table, never a schema.
          if ((err as { code?: unknown }).code !== '3F000') throw err;
          throw new OncelyError(
            'SCHEMA',
            `postgres store: ShedLock table ${table.given}: schema ${table.schema} does not exist; create it (CREATE SCHEMA ${table.schema}) or name another`,
            { cause: err },
          );
        }
        found = await columns();
      }
      checkShedlockLayout('postgres', table, found, PG_SHEDLOCK_TIME_TYPES, pgShedlockDdl(table));
    },
  };
}
