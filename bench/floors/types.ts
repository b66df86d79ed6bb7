/**
 * A floor: the same work done without oncely, on the same server, driver and pool size, so the
 * bench can say how much oncely adds on top of what you would write by hand.
 */
export interface Floor {
  /** What the bench talks to, e.g. `PostgreSQL 16.4` (shown in the machine line). */
  readonly version: string;
  /**
   * A hand-written lease lock: acquire `name` for 30 s (conditional on the previous lease having
   * expired), then release it if we still own it. Resolves `false` when the name was held.
   */
  lock(name: string): Promise<boolean>;
  /** The driver's cheapest round trip (`SELECT 1`, `PING`); `undefined` where there is none. */
  readonly roundTrip: (() => Promise<void>) | undefined;
  /** Drops the floor's table/keys and closes its connections. */
  close(): Promise<void>;
}

/** Lease length every lock in the bench asks for. */
export const LEASE_MS = 30_000;

/** Name of the table the SQL floors create for themselves (and drop again). */
export const FLOOR_TABLE = 'bench_floor_locks';
