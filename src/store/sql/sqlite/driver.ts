import type BetterSqlite3 from 'better-sqlite3';
import type { Statement } from '../dialect.js';

/** Prepares each statement once per database, lazily (tables may not exist before migrate). */
export class Prepared {
  private readonly cache = new Map<string, BetterSqlite3.Statement>();

  constructor(readonly db: BetterSqlite3.Database) {}

  get(statement: Statement): BetterSqlite3.Statement {
    let prepared = this.cache.get(statement.name);
    if (!prepared) {
      prepared = this.db.prepare(statement.text);
      // Numbers, never BigInt, even if the caller's database defaults to safe integers.
      if (prepared.reader) prepared.safeIntegers(false);
      this.cache.set(statement.name, prepared);
    }
    return prepared;
  }
}
