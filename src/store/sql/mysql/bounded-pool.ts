import type { MysqlConnectionLike, MysqlPoolLike } from './driver.js';

/** What mysql2's callback API hands a statement's callback. */
type StatementCallback = (err: Error | null, result?: unknown, fields?: unknown) => void;

/** A pooled connection of mysql2's callback API (`require('mysql2').createPool`), as used here. */
export interface RawMysqlConnection {
  query(sql: string, values: unknown, cb: StatementCallback): unknown;
  execute(sql: string, values: unknown, cb: StatementCallback): unknown;
  release(): void;
  destroy(): void;
}

/**
 * mysql2's callback pool under a {@link BoundedMysqlPool}. The callback API, not `mysql2/promise`:
 * the promise wrapper makes a `new Error()` on every call (for the stack of a failure), and
 * capturing that stack through oncely's async frames cost ~4–6 µs of node CPU per statement.
 */
export interface RawMysqlPool {
  getConnection(cb: (err: Error | null, conn?: RawMysqlConnection) => void): void;
  end(cb: (err?: Error | null) => void): void;
}

/** The error of a call that got no answer in time; SqlStore reports it as STORE_UNAVAILABLE. */
function noAnswer(what: string, ms: number): Error {
  return new Error(`${what} got no answer within ${ms} ms (the connection was dropped)`);
}

/**
 * One statement on `conn`, given up after `ms`: the connection is then destroyed (mysql2 takes it
 * out of its pool and closes the socket), so a half-open connection — the server stopped
 * answering, the socket stays open — fails the call instead of hanging it, and is never handed to
 * the next one. mysql2's own per-query `timeout` would leave that connection in the pool with the
 * command still queued on it. An answer that comes later is dropped. `onTimeout` runs first.
 */
function statement(
  conn: RawMysqlConnection,
  ms: number,
  send: (cb: StatementCallback) => unknown,
  onTimeout: () => void,
): Promise<[unknown, unknown]> {
  return new Promise((resolve, reject) => {
    let over = false;
    const timer = setTimeout(() => {
      over = true;
      onTimeout();
      conn.destroy();
      reject(noAnswer('mysql query', ms));
    }, ms);
    try {
      send((err, result, fields) => {
        if (over) return;
        over = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve([result, fields]);
      });
    } catch (err) {
      // mysql2 refuses some values synchronously (e.g. undefined bind parameters).
      over = true;
      clearTimeout(timer);
      reject(err);
    }
  });
}

/** A connection whose every query is bounded; released or destroyed once, whatever the caller does after a timeout. */
class BoundedConnection implements MysqlConnectionLike {
  private done = false;

  constructor(
    private readonly conn: RawMysqlConnection,
    private readonly ms: number,
  ) {}

  query(sql: string, values?: unknown): Promise<[unknown, unknown]> {
    if (this.done) return Promise.reject(new Error('mysql connection already given up'));
    // Destroyed on a timeout: a later release() or destroy() by the caller does nothing.
    return statement(
      this.conn,
      this.ms,
      (cb) => this.conn.query(sql, values ?? [], cb),
      () => {
        this.done = true;
      },
    );
  }

  release(): void {
    if (this.done) return;
    this.done = true;
    this.conn.release();
  }

  destroy(): void {
    if (this.done) return;
    this.done = true;
    this.conn.destroy();
  }
}

/**
 * openStore's own mysql2 pool with every call bounded by `ms` (`connectTimeoutMs`), as openStore's
 * PostgreSQL pool bounds its queries with `query_timeout`: waiting for a connection, and each
 * statement on it. A call that gets no answer in time fails (STORE_UNAVAILABLE) and its
 * connection is dropped — before, a run's finishing batch on a dead link waited for good. A pool
 * a caller passes in (`new MysqlStore({ pool })`) is used as given.
 */
export class BoundedMysqlPool implements MysqlPoolLike {
  constructor(
    private readonly raw: RawMysqlPool,
    private readonly ms: number,
  ) {}

  /** The same pool with another bound (the migration waits up to a minute for another process's). */
  withBound(ms: number): BoundedMysqlPool {
    return new BoundedMysqlPool(this.raw, ms);
  }

  async getConnection(): Promise<MysqlConnectionLike> {
    return new BoundedConnection(await this.connection(), this.ms);
  }

  query(sql: string, values?: unknown): Promise<[unknown, unknown]> {
    return this.once((conn, cb) => conn.query(sql, values ?? [], cb));
  }

  execute(sql: string, values?: unknown): Promise<[unknown, unknown]> {
    return this.once((conn, cb) => conn.execute(sql, values ?? [], cb));
  }

  end(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.raw.end((err) => (err ? reject(err) : resolve()));
    });
  }

  /**
   * One statement on a pooled connection, released after its answer (error or not), destroyed
   * without one. The hot path of every single-statement call (tryLock, release, put, get): one
   * promise and one timer for both waits — the timer bounds the wait for a connection, and is
   * restarted for the statement once the connection came.
   */
  private once(
    send: (conn: RawMysqlConnection, cb: StatementCallback) => unknown,
  ): Promise<[unknown, unknown]> {
    const ms = this.ms;
    return new Promise((resolve, reject) => {
      let conn: RawMysqlConnection | undefined;
      let over = false;
      const timer = setTimeout(() => {
        over = true;
        conn?.destroy();
        reject(noAnswer(conn ? 'mysql query' : 'mysql connection', ms));
      }, ms);
      this.raw.getConnection((err, got) => {
        if (over) {
          got?.release(); // came after the bound: back to the pool, unused
          return;
        }
        if (err || !got) {
          over = true;
          clearTimeout(timer);
          reject(err ?? new Error('mysql pool gave no connection'));
          return;
        }
        conn = got;
        timer.refresh();
        try {
          send(got, (failed, result, fields) => {
            if (over) return; // the connection was destroyed at the bound; the late answer is dropped
            over = true;
            clearTimeout(timer);
            got.release();
            if (failed) reject(failed);
            else resolve([result, fields]);
          });
        } catch (thrown) {
          over = true;
          clearTimeout(timer);
          got.release();
          reject(thrown);
        }
      });
    });
  }

  /** A pooled connection, waited for at most `ms` (a connection that comes later is released). */
  private connection(): Promise<RawMysqlConnection> {
    const ms = this.ms;
    return new Promise((resolve, reject) => {
      let over = false;
      const timer = setTimeout(() => {
        over = true;
        reject(noAnswer('mysql connection', ms));
      }, ms);
      this.raw.getConnection((err, got) => {
        if (over) {
          got?.release();
          return;
        }
        over = true;
        clearTimeout(timer);
        if (err || !got) reject(err ?? new Error('mysql pool gave no connection'));
        else resolve(got);
      });
    });
  }
}
