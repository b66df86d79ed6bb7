import { type Duration, parsePositiveDuration } from '../../core/duration.js';
import { invalidArgument } from '../../core/errors.js';

/** What `define(name, { rateLimit })` accepts: at most `max` starts per `per`, fleet-wide. */
export interface RateLimit {
  /** Starts allowed per window (1–100,000). */
  max: number;
  /** The window: a Duration (`'1s'`, `'1m'`, ms), 1 ms to 1 day. */
  per: Duration;
}

/** A job's fleet-wide limits, validated (run/fleet-limits.ts). */
export interface FleetLimitSpec {
  /** At most this many runs of the job at once across the fleet. */
  maxConcurrency: number | undefined;
  /** At most `max` starts in any window of `perMs` on the store's clock, fleet-wide. */
  rate: { max: number; perMs: number } | undefined;
}

/** Largest maxConcurrency and rateLimit.max: a fleet limit beyond it is no limit. */
export const MAX_FLEET_LIMIT = 100_000;
const MAX_RATE_WINDOW_MS = 86_400_000;

/**
 * The job's `maxConcurrency` and `rateLimit`, or `undefined` when it has neither (nothing to
 * reserve per tick). `at(field)` names the field in messages; `store`: the capabilities of the
 * scheduler's store, when known.
 */
export function fleetLimitsOf(
  o: { maxConcurrency?: unknown; rateLimit?: unknown },
  at: (field: string) => string,
  store?: { pages: boolean },
): FleetLimitSpec | undefined {
  if (o.maxConcurrency === undefined && o.rateLimit === undefined) return undefined;
  // Kept by compare-and-move in `claimPage` (fleet-limits.ts).
  if (store && !store.pages)
    throw invalidArgument(
      `${at(o.maxConcurrency !== undefined ? 'maxConcurrency' : 'rateLimit')} needs a store with pages (claimPage; every shipped backend has them); this store has none`,
    );
  const whole = (v: unknown, what: string): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_FLEET_LIMIT)
      throw invalidArgument(
        `${what} must be a whole number from 1 to ${MAX_FLEET_LIMIT}; got ${JSON.stringify(v)}`,
      );
    return v;
  };
  const maxConcurrency =
    o.maxConcurrency === undefined ? undefined : whole(o.maxConcurrency, at('maxConcurrency'));
  let rate: FleetLimitSpec['rate'];
  if (o.rateLimit !== undefined) {
    const r = o.rateLimit as { max?: unknown; per?: unknown } | null;
    if (r === null || typeof r !== 'object' || Array.isArray(r))
      throw invalidArgument(`${at('rateLimit')} must be { max, per } (e.g. { max: 500, per: '1s' })`);
    for (const field of Object.keys(r))
      if (field !== 'max' && field !== 'per')
        throw invalidArgument(`${at('rateLimit')}.${field} is not known; rateLimit takes { max, per }`);
    const max = whole(r.max, at('rateLimit.max'));
    if (r.per === undefined) throw invalidArgument(`${at('rateLimit.per')} is required (e.g. '1s')`);
    const perMs = parsePositiveDuration(r.per as Duration, at('rateLimit.per'));
    if (perMs > MAX_RATE_WINDOW_MS)
      throw invalidArgument(`${at('rateLimit.per')} must be at most 1 day; got ${perMs} ms`);
    rate = { max, perMs };
  }
  return { maxConcurrency, rate };
}
