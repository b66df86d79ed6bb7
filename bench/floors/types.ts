/**
 * A floor: the same work done without oncely, on the same server, driver and pool size, so the
 * bench can say how much oncely adds on top of what you would write by hand.
 *
 * Every hand-written lock has oncely's semantics, so the comparison is like for like:
 * - a fencing token that strictly increases per name, also after the name's row or key is
 *   cleaned up: drawn from a store-wide sequence or counter inside the acquiring statement or
 *   script (never before it, on the client);
 * - expiry judged on the store's own clock (`now()`, `UTC_TIMESTAMP(3)`, SQLite's clock, Redis'
 *   PX expiry), never on the caller's;
 * - release only by the holder (token checked, and the lease must not have expired), ending the
 *   lease so the name is free at once; the SQL floors keep the row (`UPDATE`), as oncely does.
 * Each uses its driver's fastest documented way to run the two statements: named (prepared)
 * statements in pg, `execute` (server-side prepared) in mysql2, EVALSHA through `defineCommand`
 * in ioredis, prepared statements in better-sqlite3.
 */
export interface Floor {
  /** What the bench talks to, e.g. `PostgreSQL 16.4` (shown in the machine line). */
  readonly version: string;
  /**
   * A hand-written lease lock: acquire `name` for 30 s (conditional on the previous lease having
   * expired), then release it if we still hold it. Resolves `false` when the name was held.
   */
  lock(name: string): Promise<boolean>;
  /** The driver's cheapest round trip (`SELECT 1`, `PING`); `undefined` where there is none. */
  readonly roundTrip: (() => Promise<void>) | undefined;
  /** Drops the floor's table/keys and closes its connections. */
  close(): Promise<void>;
}

/** Where a floor keeps its locks: a table (SQL) or key prefix (Redis) of its own. */
export interface FloorOptions {
  url: string;
  /** Connections in the floor's pool (SQL servers); 1 = a single connection. */
  poolSize: number;
  /** Table name (or Redis key prefix) of this floor; two floors on one server use two. */
  table: string;
}

/** Lease length every lock in the bench asks for. */
export const LEASE_MS = 30_000;

/** Name of the table the SQL floors create for themselves (and drop again). */
export const FLOOR_TABLE = 'bench_floor_locks';

/** Table of the 1-connection floor measured the independent benchmark's way. */
export const SEQUENTIAL_FLOOR_TABLE = 'bench_floor1_locks';
