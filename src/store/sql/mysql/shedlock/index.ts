import { OncelyError } from '../../../../core/errors.js';
import type { LockGrant } from '../../../lock-table.js';
import type { Row, SqlValue, Statement } from '../../dialect.js';
import { checkShedlockLayout, columnsOf } from '../../shedlock/layout.js';
import type { ShedlockOps } from '../../shedlock/ops.js';
import type { ShedlockTableName } from '../../shedlock/table-name.js';
import type { Tables } from '../../tables.js';
import type { MysqlHeader, ScriptPart } from '../driver.js';
import { mysqlInline } from '../literal.js';
import { mysqlShedlockAcquireScript, mysqlShedlockGranted } from './acquire.js';
import { mysqlShedlockExtend } from './extend.js';
import { mysqlShedlockRelease } from './release.js';
import { MYSQL_SHEDLOCK_COLUMNS, MYSQL_SHEDLOCK_TIME_TYPES, mysqlShedlockDdl } from './schema.js';
import { MYSQL_TIMESTAMP_END_MS } from './time.js';

/** What the MySQL dialect lends its ShedLock statements: its three ways to talk to the server. */
export interface MysqlShedlockDriver {
  /** One statement, prepared when it can be. */
  exec(statement: Statement, params: readonly SqlValue[]): Promise<[unknown, unknown]>;
  /** A script in one transaction (one round trip with multipleStatements). */
  script(parts: readonly ScriptPart[]): Promise<unknown[]>;
  /** A text query without values. */
  query(sql: string): Promise<unknown>;
}

/** ShedLock-table locks on MySQL/MariaDB. */
export function mysqlShedlock(table: ShedlockTableName, t: Tables, driver: MysqlShedlockDriver): ShedlockOps {
  const extend = mysqlShedlockExtend(table);
  const release = mysqlShedlockRelease(table);
  const columns = async () =>
    columnsOf(
      (await driver.query(mysqlInline(MYSQL_SHEDLOCK_COLUMNS, [table.schema ?? null, table.table]))) as Row[],
    );
  const header = async (statement: Statement, params: readonly SqlValue[]) =>
    (await driver.exec(statement, params))[0] as MysqlHeader;
  return {
    table,
    // ShedLock's TIMESTAMP(3) columns end in January 2038; a later lock_until would be refused
    // (strict mode) or stored as zero, a lock that is free at once. Judged on the local clock with
    // a day to spare: this only bounds the input, it decides no lease.
    maxLeaseMs: () => MYSQL_TIMESTAMP_END_MS - 86_400_000 - Date.now(),
    async acquire(name, owner, leaseMs) {
      return mysqlShedlockGranted(
        await driver.script(mysqlShedlockAcquireScript(table, t, name, owner, leaseMs)),
        leaseMs,
      );
    },
    async extend(grant: LockGrant, leaseMs) {
      const { insertId } = await header(extend, [
        leaseMs,
        leaseMs,
        grant.name,
        grant.owner,
        grant.acquiredAt,
      ]);
      return insertId > 0 ? Number(insertId) : null;
    },
    async release(grant: LockGrant, holdUntil) {
      const params = [holdUntil, holdUntil, grant.name, grant.owner, grant.acquiredAt];
      return (await header(release, params)).insertId > 0;
    },
    async migrate() {
      let found = await columns();
      if (found.length === 0) {
        try {
          await driver.query(mysqlShedlockDdl(table));
        } catch (err) {
          // ER_BAD_DB_ERROR: oncely creates the table, never a database.
          if ((err as { errno?: unknown }).errno !== 1049) throw err;
          throw new OncelyError(
            'SCHEMA',
            `mysql store: ShedLock table ${table.given}: database ${table.schema} does not exist; create it or name another`,
            { cause: err },
          );
        }
        found = await columns();
      }
      checkShedlockLayout('mysql', table, found, MYSQL_SHEDLOCK_TIME_TYPES, mysqlShedlockDdl(table));
    },
  };
}
