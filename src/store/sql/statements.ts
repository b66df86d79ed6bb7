import type { SqlSyntax, SqlValue, Statement } from './dialect.js';
import type { Tables } from './tables.js';

/** Which of the scan statements to run: an upper bound exists unless the prefix is empty. */
export interface ScanShape {
  reverse: boolean;
  upper: boolean;
  after: boolean;
}

/**
 * The statements every SQL engine runs with the same text up to placeholders, quoting and the
 * clock expression: single-statement reads, and the record deletes. None of them races:
 * each reads or deletes with one condition evaluated by the server at one instant.
 *
 * Prefix matches are ranges (`key >= prefix AND key < upper`, upper = `prefixUpperBound`), never
 * LIKE: `%` and `_` stay literal, the comparison is code point order on every engine (PostgreSQL
 * `COLLATE "C"`, MySQL VARBINARY, SQLite BINARY), and the primary key index serves it.
 */
export class SharedStatements {
  /** () → one row `{ now }`. */
  readonly now: Statement;
  /** (key) → the unexpired lease row, if any. */
  readonly inspect: Statement;
  /** (key) → `{ value }` of the unexpired record, if any. */
  readonly get: Statement;
  /**
   * (key) → affected 1 when an unexpired record was deleted. An expired row is left for sweep:
   * it is invisible to every read and `put` overwrites it, so keeping it changes nothing.
   */
  readonly delete: Statement;
  /**
   * (key, value) → affected 1 when an unexpired record holding exactly `value` was deleted
   * (compare-and-delete). The value is compared by the server on the row the DELETE locks, so a
   * record replaced meanwhile is judged by its new value; nothing else is written.
   */
  readonly deleteIf: Statement;
  private readonly cache = new Map<string, Statement>();

  constructor(
    private readonly t: Tables,
    private readonly syntax: SqlSyntax,
  ) {
    const s = syntax;
    const k = s.key;
    const p = (n: number) => s.param(n);
    const leaseColumns = `${k} AS ${k}, owner, token, acquired_at, expires_at`;
    const liveRecord = `(expires_at IS NULL OR expires_at > ${s.now})`;
    this.now = { name: `${t.prefix}now`, text: `SELECT ${s.now} AS now` };
    this.inspect = {
      name: `${t.prefix}inspect`,
      text: `SELECT ${leaseColumns} FROM ${t.leases} WHERE ${k} = ${p(1)} AND expires_at > ${s.now}`,
    };
    this.get = {
      name: `${t.prefix}get`,
      text: `SELECT value FROM ${t.records} WHERE ${k} = ${p(1)} AND ${liveRecord}`,
    };
    this.delete = {
      name: `${t.prefix}delete`,
      text: `DELETE FROM ${t.records} WHERE ${k} = ${p(1)} AND ${liveRecord}`,
    };
    const sameValue = s.sameValue ? s.sameValue(p(2)) : `value = ${p(2)}`;
    this.deleteIf = {
      name: `${t.prefix}delete_if`,
      text: `DELETE FROM ${t.records} WHERE ${k} = ${p(1)} AND ${sameValue} AND ${liveRecord}`,
    };
  }

  /** (lower, [upper,] limit) → unexpired lease rows in the key range, ascending. */
  listLeases(upper: boolean): Statement {
    return this.cached(`list_${upper ? 'range' : 'from'}`, () => {
      const s = this.syntax;
      const t = this.t;
      const k = s.key;
      let n = 0;
      const where = [`${k} >= ${s.param(++n)}`];
      if (upper) where.push(`${k} < ${s.param(++n)}`);
      where.push(`expires_at > ${s.now}`);
      return (
        `SELECT ${k} AS ${k}, owner, token, acquired_at, expires_at FROM ${t.leases} ` +
        `WHERE ${where.join(' AND ')} ORDER BY ${k} ASC LIMIT ${s.param(++n)}`
      );
    });
  }

  /** (lower, [upper,] [after,] limit) → unexpired record rows in the key range, in scan order. */
  scan(shape: ScanShape): Statement {
    const id = `scan_${shape.reverse ? 'desc' : 'asc'}${shape.upper ? '_range' : ''}${shape.after ? '_after' : ''}`;
    return this.cached(id, () => {
      const s = this.syntax;
      const t = this.t;
      const k = s.key;
      let n = 0;
      const where = [`${k} >= ${s.param(++n)}`];
      if (shape.upper) where.push(`${k} < ${s.param(++n)}`);
      if (shape.after) where.push(`${k} ${shape.reverse ? '<' : '>'} ${s.param(++n)}`);
      where.push(`(expires_at IS NULL OR expires_at > ${s.now})`);
      return (
        `SELECT ${k} AS ${k}, value, expires_at FROM ${t.records} WHERE ${where.join(' AND ')} ` +
        `ORDER BY ${k} ${shape.reverse ? 'DESC' : 'ASC'} LIMIT ${s.param(++n)}`
      );
    });
  }

  /**
   * (keys) → `{ key, value }` of the unexpired records among `keys` (distinct, 1..1,000), in no
   * particular order, in one statement. Where the engine binds arrays (`syntax.anyKey`) it is one
   * statement for every batch; otherwise `key IN (?, …)` with the list padded (by repeating its
   * last key, which changes nothing in an IN list) to the next power of two, so an engine that
   * prepares statements per connection prepares at most 11 of them, not 1,000. Either way the
   * primary key index serves each key, and every row is judged at one store instant.
   */
  getMany(keys: readonly string[]): { statement: Statement; params: SqlValue[] } {
    const s = this.syntax;
    const k = s.key;
    const select = `SELECT ${k} AS ${k}, value FROM ${this.t.records} WHERE `;
    const live = `(expires_at IS NULL OR expires_at > ${this.nowOnce()})`;
    if (s.anyKey) {
      const statement = this.cached('get_many', () => `${select}${k} = ${s.anyKey!(s.param(1))} AND ${live}`);
      return { statement, params: [keys] };
    }
    let size = 1;
    while (size < keys.length) size *= 2;
    const statement = this.cached(`get_many_${size}`, () => {
      const list = Array.from({ length: size }, (_, i) => s.param(i + 1)).join(', ');
      return `${select}${k} IN (${list}) AND ${live}`;
    });
    const params: SqlValue[] = [...keys];
    while (params.length < size) params.push(keys[keys.length - 1]!);
    return { statement, params };
  }

  /**
   * (lower, [upper]) → one row `{ n }`: how many unexpired records lie in the key range, the
   * range `scan` uses (so the key index serves it), judged at one store instant.
   */
  count(upper: boolean): Statement {
    return this.cached(`count${upper ? '_range' : ''}`, () => {
      const s = this.syntax;
      const k = s.key;
      const where = [`${k} >= ${s.param(1)}`];
      if (upper) where.push(`${k} < ${s.param(2)}`);
      where.push(`(expires_at IS NULL OR expires_at > ${this.nowOnce()})`);
      return `SELECT COUNT(*) AS n FROM ${this.t.records} WHERE ${where.join(' AND ')}`;
    });
  }

  /**
   * The store clock as an uncorrelated scalar subquery: every engine evaluates it once per
   * execution, so a statement over many rows judges them all at one instant (PostgreSQL's
   * `clock_timestamp()` would otherwise be read anew for every row).
   */
  private nowOnce(): string {
    return `(SELECT ${this.syntax.now})`;
  }

  private cached(id: string, build: () => string): Statement {
    let statement = this.cache.get(id);
    if (!statement) {
      statement = { name: `${this.t.prefix}${id}`, text: build() };
      this.cache.set(id, statement);
    }
    return statement;
  }
}
