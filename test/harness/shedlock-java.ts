/**
 * A stand-in for a Java service on ShedLock's JDBC provider (`JdbcTemplateLockProvider`), talking
 * to the same table through the raw driver. The SQL is written here from ShedLock's documented
 * behaviour, one statement per call as ShedLock sends it:
 *
 * - client-clock mode (the default; with `forceUtcTimeZone()`): the Java host passes its own clock
 *   as UTC timestamps. lock = `INSERT`, and on a duplicate key `UPDATE … WHERE name = ? AND
 *   lock_until <= now`; unlock = `UPDATE … SET lock_until = max(now, lockedAt + lockAtLeastFor)
 *   WHERE name = ?` (no holder check); extend = `UPDATE … WHERE name AND locked_by AND lock_until > now`.
 * - `usingDbTime()`: the same steps with the database clock (PostgreSQL `timezone('utc',
 *   CURRENT_TIMESTAMP)` in one `INSERT … ON CONFLICT DO UPDATE … WHERE`, MySQL `UTC_TIMESTAMP(3)`
 *   with `INSERT IGNORE` then `UPDATE`); unlock checks `locked_by` too.
 *
 * ShedLock treats a serialisation failure or deadlock during lock as "not acquired"; so does this.
 */
import type mysql from 'mysql2/promise';
import type pg from 'pg';

export type JavaMode = 'client-clock' | 'db-time';

export interface JavaOptions {
  engine: 'postgres' | 'mysql';
  /** The quoted table name. */
  table: string;
  mode: JavaMode;
  /** ShedLock's `locked_by`: the host name. */
  lockedBy: string;
  /** How far the Java host's clock is off (client-clock mode only). */
  skewMs?: number;
}

type Exec = (sql: string, values: unknown[]) => Promise<number>;

/** A UTC timestamp literal with milliseconds, as ShedLock with `forceUtcTimeZone()` binds it. */
function utc(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

function isDuplicate(err: unknown): boolean {
  const e = err as { code?: unknown; errno?: unknown };
  return e.code === '23505' || e.errno === 1062;
}

function isConcurrencyFailure(err: unknown): boolean {
  const e = err as { code?: unknown; errno?: unknown };
  return e.code === '40P01' || e.code === '40001' || e.errno === 1213 || e.errno === 1205;
}

export class JavaShedLock {
  private readonly exec: Exec;
  /** When each lock this "JVM" holds was taken, by its own clock (client-clock unlock needs it). */
  private readonly lockedAt = new Map<string, number>();

  constructor(
    db: pg.Pool | mysql.Pool,
    private readonly options: JavaOptions,
  ) {
    this.exec =
      options.engine === 'postgres'
        ? async (sql, values) => {
            let n = 0;
            const text = sql.replace(/\?/g, () => `$${++n}`);
            return (await (db as pg.Pool).query(text, values)).rowCount ?? 0;
          }
        : async (sql, values) => {
            const [header] = await (db as mysql.Pool).query(sql, values);
            return (header as { affectedRows: number }).affectedRows;
          };
  }

  private now(): number {
    return Date.now() + (this.options.skewMs ?? 0);
  }

  /** ShedLock's `lock`: true when acquired. */
  async lock(name: string, lockAtMostForMs: number): Promise<boolean> {
    try {
      return this.options.mode === 'db-time'
        ? await this.lockDbTime(name, lockAtMostForMs)
        : await this.lockClientClock(name, lockAtMostForMs);
    } catch (err) {
      if (isConcurrencyFailure(err)) return false;
      throw err;
    }
  }

  private async lockClientClock(name: string, atMostMs: number): Promise<boolean> {
    const { table, lockedBy } = this.options;
    const now = this.now();
    const until = utc(now + atMostMs);
    let done: number;
    try {
      done = await this.exec(
        `INSERT INTO ${table}(name, lock_until, locked_at, locked_by) VALUES(?, ?, ?, ?)`,
        [name, until, utc(now), lockedBy],
      );
    } catch (err) {
      if (!isDuplicate(err)) throw err;
      done = await this.exec(
        `UPDATE ${table} SET lock_until = ?, locked_at = ?, locked_by = ? WHERE name = ? AND lock_until <= ?`,
        [until, utc(now), lockedBy, name, utc(now)],
      );
    }
    if (done > 0) this.lockedAt.set(name, now);
    return done > 0;
  }

  private async lockDbTime(name: string, atMostMs: number): Promise<boolean> {
    const { table, lockedBy } = this.options;
    if (this.options.engine === 'postgres') {
      const now = "timezone('utc', CURRENT_TIMESTAMP)";
      const until = `${now} + cast(? as interval)`;
      const interval = `${atMostMs} milliseconds`;
      return (
        (await this.exec(
          `INSERT INTO ${table}(name, lock_until, locked_at, locked_by) VALUES(?, ${until}, ${now}, ?) ` +
            `ON CONFLICT (name) DO UPDATE SET lock_until = ${until}, locked_at = ${now}, locked_by = ? ` +
            `WHERE ${table}.name = ? AND ${table}.lock_until <= ${now}`,
          [name, interval, lockedBy, interval, lockedBy, name],
        )) > 0
      );
    }
    const now = 'UTC_TIMESTAMP(3)';
    const until = `TIMESTAMPADD(MICROSECOND, ?, ${now})`;
    const micros = atMostMs * 1000;
    const inserted = await this.exec(
      `INSERT IGNORE INTO ${table}(name, lock_until, locked_at, locked_by) VALUES(?, ${until}, ${now}, ?)`,
      [name, micros, lockedBy],
    );
    if (inserted > 0) return true;
    return (
      (await this.exec(
        `UPDATE ${table} SET lock_until = ${until}, locked_at = ${now}, locked_by = ? WHERE name = ? AND lock_until <= ${now}`,
        [micros, lockedBy, name],
      )) > 0
    );
  }

  /** ShedLock's `unlock` of a lock this "JVM" took, keeping it at least `lockAtLeastForMs` after it was taken. */
  async unlock(name: string, lockAtLeastForMs = 0): Promise<void> {
    const { table, lockedBy } = this.options;
    if (this.options.mode === 'client-clock') {
      const lockedAt = this.lockedAt.get(name) ?? this.now();
      const unlockTime = utc(Math.max(this.now(), lockedAt + lockAtLeastForMs));
      await this.exec(`UPDATE ${table} SET lock_until = ? WHERE name = ?`, [unlockTime, name]);
      return;
    }
    if (this.options.engine === 'postgres') {
      const now = "timezone('utc', CURRENT_TIMESTAMP)";
      const atLeast = 'locked_at + cast(? as interval)';
      const interval = `${lockAtLeastForMs} milliseconds`;
      await this.exec(
        `UPDATE ${table} SET lock_until = CASE WHEN ${atLeast} > ${now} THEN ${atLeast} ELSE ${now} END ` +
          'WHERE name = ? AND locked_by = ?',
        [interval, interval, name, lockedBy],
      );
      return;
    }
    const now = 'UTC_TIMESTAMP(3)';
    const atLeast = 'TIMESTAMPADD(MICROSECOND, ?, locked_at)';
    const micros = lockAtLeastForMs * 1000;
    await this.exec(
      `UPDATE ${table} SET lock_until = IF (${atLeast} > ${now}, ${atLeast}, ${now}) WHERE name = ? AND locked_by = ?`,
      [micros, micros, name, lockedBy],
    );
  }

  /** ShedLock's `extend`: true when this host still held an unexpired lock. */
  async extend(name: string, lockAtMostForMs: number): Promise<boolean> {
    const { table, lockedBy } = this.options;
    if (this.options.mode === 'client-clock') {
      const now = this.now();
      return (
        (await this.exec(
          `UPDATE ${table} SET lock_until = ? WHERE name = ? AND locked_by = ? AND lock_until > ?`,
          [utc(now + lockAtMostForMs), name, lockedBy, utc(now)],
        )) > 0
      );
    }
    if (this.options.engine === 'postgres') {
      const now = "timezone('utc', CURRENT_TIMESTAMP)";
      return (
        (await this.exec(
          `UPDATE ${table} SET lock_until = ${now} + cast(? as interval) WHERE name = ? AND locked_by = ? AND lock_until > ${now}`,
          [`${lockAtMostForMs} milliseconds`, name, lockedBy],
        )) > 0
      );
    }
    const now = 'UTC_TIMESTAMP(3)';
    return (
      (await this.exec(
        `UPDATE ${table} SET lock_until = TIMESTAMPADD(MICROSECOND, ?, ${now}) WHERE name = ? AND locked_by = ? AND lock_until > ${now}`,
        [lockAtMostForMs * 1000, name, lockedBy],
      )) > 0
    );
  }
}
