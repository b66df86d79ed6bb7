import type { MysqlConnectionLike, MysqlPoolLike } from './driver.js';

/** A pooled mysql2/promise connection as the bounded pool uses it. */
interface PooledConnection extends MysqlConnectionLike {
  execute(sql: string, values?: unknown): Promise<[unknown, unknown]>;
  destroy(): void;
}

/** The mysql2/promise pool under a {@link BoundedMysqlPool}. */
export interface RawMysqlPool {
  getConnection(): Promise<PooledConnection>;
  end(): Promise<void>;
}

/** The error of a call that got no answer in time; SqlStore reports it as STORE_UNAVAILABLE. */
function noAnswer(what: string, ms: number): Error {
  return new Error(`${what} got no answer within ${ms} ms (the connection was dropped)`);
}

/**
 * `work`'s answer if it comes within `ms`; else the call fails (STORE_UNAVAILABLE in SqlStore)
 * after `onTimeout`, and an answer that still comes goes to `onLate` (a late pooled connection is
 * released) or is dropped (a late query result, or its error).
 */
function within<T>(
  work: Promise<T>,
  ms: number,
  what: string,
  onTimeout: () => void,
  onLate?: (value: T) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      onTimeout();
      reject(noAnswer(what, ms));
    }, ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        if (late) onLate?.(value);
        else resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/**
 * `work` on `conn`, given up after `ms`: the connection is then destroyed (mysql2 takes it out of
 * its pool and closes the socket), so a half-open connection — the server stopped answering, the
 * socket stays open — fails the call instead of hanging it, and is never handed to the next one.
 * mysql2's own per-query `timeout` would leave that connection in the pool with the command still
 * queued on it.
 */
function bounded<T>(
  conn: PooledConnection,
  ms: number,
  work: Promise<T>,
  onTimeout?: () => void,
): Promise<T> {
  return within(work, ms, 'mysql query', () => {
    onTimeout?.();
    conn.destroy();
  });
}

/** A connection whose every query is bounded; released or destroyed once, whatever the caller does after a timeout. */
class BoundedConnection implements MysqlConnectionLike {
  private done = false;

  constructor(
    private readonly conn: PooledConnection,
    private readonly ms: number,
  ) {}

  query(sql: string, values?: unknown): Promise<[unknown, unknown]> {
    if (this.done) return Promise.reject(new Error('mysql connection already given up'));
    // Destroyed on a timeout: a later release() or destroy() by the caller does nothing.
    return bounded(this.conn, this.ms, this.conn.query(sql, values), () => {
      this.done = true;
    });
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
    private readonly pool: RawMysqlPool,
    private readonly ms: number,
  ) {}

  /** The same pool with another bound (the migration waits up to a minute for another process's). */
  withBound(ms: number): BoundedMysqlPool {
    return new BoundedMysqlPool(this.pool, ms);
  }

  async getConnection(): Promise<MysqlConnectionLike> {
    return new BoundedConnection(await this.connection(), this.ms);
  }

  query(sql: string, values?: unknown): Promise<[unknown, unknown]> {
    return this.once((conn) => conn.query(sql, values));
  }

  execute(sql: string, values?: unknown): Promise<[unknown, unknown]> {
    return this.once((conn) => conn.execute(sql, values));
  }

  end(): Promise<void> {
    return this.pool.end();
  }

  /** One statement on a pooled connection, released after its answer (error or not), destroyed without one. */
  private async once(
    work: (conn: PooledConnection) => Promise<[unknown, unknown]>,
  ): Promise<[unknown, unknown]> {
    const conn = await this.connection();
    let timedOut = false;
    try {
      return await bounded(conn, this.ms, work(conn), () => {
        timedOut = true;
      });
    } finally {
      if (!timedOut) conn.release();
    }
  }

  /** A pooled connection, waited for at most `ms` (a connection that comes later is released). */
  private connection(): Promise<PooledConnection> {
    return within(
      this.pool.getConnection(),
      this.ms,
      'mysql connection',
      () => {},
      (conn) => conn.release(),
    );
  }
}
