import { type Clock, systemClock } from '../../core/clock.js';
import { invalidArgument, OncelyError } from '../../core/errors.js';
import { KeepAlive } from '../../lock/keep-alive.js';
import type { Store } from '../../store/types.js';
import { OnceClaim } from './claim.js';
import { type DerivedFireTime, deriveFireTime } from './fire-time.js';
import { claimKey, keyableTime, type OnceSpec, onceSpec } from './options.js';
import type { OnceContext, OnceErrorPhase, OnceOptions, OnceOutcome, OnceTick } from './types.js';

/**
 * Claims of past fire times stay stored (expired) until swept: after a tick, a bounded batch of
 * expired leases and records is deleted, at most this often per store in this process (a
 * scheduler on the same store sweeps too).
 */
const SWEEP_EVERY_MS = 60_000;
/** Monotonic time of the next sweep, per store: one for all the tick functions of a process. */
const nextSweepAt = new WeakMap<Store, number>();

export interface OnceInternals {
  clock?: Clock;
  /** The local wall clock ticks are snapped with (default `Date.now`). */
  now?: () => number;
}

/**
 * Wraps `fn` for an existing cron library so that each **fire time** runs on one instance only,
 * however many replicas tick: hand the result to croner, node-cron or setInterval.
 *
 * Each tick is snapped to the fire time it stands for (see `fire-time.ts`) and claims
 * `(name, fireTime)` in the store (one conditional acquire on the store clock). The instance that
 * gets the claim runs `fn`, renewing the claim while it runs; afterwards the fire time stays taken
 * until `fireTime + tolerance`, so a tick that comes late on another instance — a slow timer, a
 * clock a few seconds behind — finds it taken and does not run it again. A claim granted later than
 * `fireTime + tolerance` is refused instead (the fire time was missed). A claim granted before the
 * fire time (this instance's clock runs ahead of the store's) waits for it before `fn` starts.
 *
 * The returned function never rejects (a cron library's timer must not see an error): `fn`
 * throwing, a store outage (the tick is skipped: `fn` never runs unclaimed) and a tick without a
 * fire time go to `onError` (default: the logger). Its `run(tick)` resolves to what the tick did.
 *
 * Guarantees: at most one run per `(name, fireTime)` on a store that keeps its leases — also when
 * the instance running it dies (its claim lasts until `fireTime + tolerance`, after which no claim
 * is granted a run). Not overlap control: runs of consecutive fire times may overlap on different
 * instances if `fn` takes longer than the interval.
 *
 * @example
 * import { Cron } from 'croner';
 * new Cron('0 * * * * *', once(store, { name: 'sync' }, async ({ fireTime, token, signal }) => {
 *   await syncInventory({ asOf: fireTime, fencingToken: token, signal });
 * }));
 * // node-cron:   cron.schedule('0 * * * *', once(store, { name: 'report' }, sendReport));
 * // setInterval: setInterval(once(store, { name: 'poll', every: '10s' }, poll), 10_000);
 *
 * @param internals For oncely's own tests (an injected clock); leave it out.
 */
export function once<T>(
  store: Store,
  options: OnceOptions,
  fn: (ctx: OnceContext) => Promise<T> | T,
  internals: OnceInternals = {},
): OnceTick<T> {
  const spec = onceSpec(options);
  if (store === null || typeof store !== 'object' || typeof (store as Partial<Store>).acquire !== 'function')
    throw invalidArgument(
      `once(${JSON.stringify(spec.name)}): the first argument must be a store (openStore(url))`,
    );
  if (typeof fn !== 'function')
    throw invalidArgument(
      `once(${JSON.stringify(spec.name)}): the third argument must be the function to run`,
    );
  const clock = internals.clock ?? systemClock;
  const wallNow = internals.now ?? (() => Date.now());
  if (!nextSweepAt.has(store)) nextSweepAt.set(store, clock.monotonic() + SWEEP_EVERY_MS);

  async function run(tick?: unknown): Promise<OnceOutcome<T>> {
    let derived: DerivedFireTime | undefined;
    try {
      derived = deriveFireTime(spec.trigger, tick, wallNow(), spec.name);
    } catch (err) {
      const error = OncelyError.from(err);
      spec.report(error, { name: spec.name, fireTime: undefined, during: 'fire-time' });
      return { status: 'skipped', reason: 'no-fire-time', error };
    }
    if (derived === undefined || !keyableTime(derived.fireTime)) {
      spec.logger.warn(
        `once ${JSON.stringify(spec.name)}: the schedule has no fire time at or before this tick`,
      );
      return { status: 'skipped', reason: 'no-fire-time' };
    }
    const outcome = await claimAndRun(spec, store, fn, derived.fireTime, clock);
    if (clock.monotonic() >= (nextSweepAt.get(store) ?? 0)) {
      nextSweepAt.set(store, clock.monotonic() + SWEEP_EVERY_MS);
      await store
        .sweep({ limit: 1000 })
        .catch((err: unknown) => spec.logger.debug(`once ${JSON.stringify(spec.name)}: sweep failed`, err));
    }
    return outcome;
  }
  const onceTick = async (tick?: unknown): Promise<void> => {
    // run() settles every failure it knows of into an outcome; this is for a throwing logger.
    await run(tick).catch((err: unknown) => console.error(`once ${JSON.stringify(spec.name)}:`, err));
  };
  return Object.assign(onceTick, { run });
}

async function claimAndRun<T>(
  spec: OnceSpec,
  store: Store,
  fn: (ctx: OnceContext) => Promise<T> | T,
  fire: number,
  clock: Clock,
): Promise<OnceOutcome<T>> {
  const fireTime = new Date(fire);
  const report = (error: unknown, during: OnceErrorPhase) =>
    spec.report(error, { name: spec.name, fireTime, during });
  let claim: OnceClaim | null;
  try {
    claim = await OnceClaim.take(store, claimKey(spec.name, fire), spec.owner, spec.leaseMs, clock);
  } catch (error) {
    report(error, 'claim');
    return { status: 'skipped', reason: 'store-error', fireTime, error };
  }
  if (!claim) {
    spec.logger.debug(`once ${JSON.stringify(spec.name)}: ${fireTime.toISOString()} is taken`);
    return { status: 'skipped', reason: 'taken', fireTime };
  }
  const lateBy = claim.acquiredAt - fire;
  if (lateBy > spec.toleranceMs) {
    // Free since: nobody claimed it within the tolerance (or its hold is over). A run now could
    // repeat one whose hold has ended, so it counts as missed; the key is freed, nothing ran.
    await claim.release().catch(() => {});
    spec.logger.warn(
      `once ${JSON.stringify(spec.name)}: fire time ${fireTime.toISOString()} claimed ${(lateBy / 1000).toFixed(1)} s after it on the store clock (tolerance ${spec.toleranceMs / 1000} s): not run; is this host's clock behind, or its event loop blocked?`,
    );
    return { status: 'skipped', reason: 'late', fireTime };
  }
  const keeper = new KeepAlive(claim, { leaseMs: spec.leaseMs, renew: true, clock, logger: spec.logger });
  try {
    if (!(await reachFireTime(spec, claim, fire, keeper.signal, clock))) {
      const error = keeper.signal.reason ?? new OncelyError('LOCK_LOST', 'claim lost before the run started');
      report(error, 'claim');
      return { status: 'skipped', reason: 'store-error', fireTime, error };
    }
    try {
      const value = await fn({ name: spec.name, fireTime, token: claim.token, signal: keeper.signal });
      return { status: 'succeeded', fireTime, token: claim.token, value };
    } catch (error) {
      report(error, 'run');
      return { status: 'failed', fireTime, token: claim.token, error };
    }
  } finally {
    await keeper.stop();
    // The "done" hold: taken until fireTime + tolerance, the latest a claim may be granted a run.
    await claim.release(fire + spec.toleranceMs).then(
      (held) => {
        if (!held)
          spec.logger.warn(
            `once ${JSON.stringify(spec.name)}: claim of ${fireTime.toISOString()} was lost before its release`,
          );
      },
      (error: unknown) => report(error, 'release'),
    );
  }
}

/**
 * Before `fn` starts: the store clock must have reached the fire time (an instance whose clock
 * runs ahead claims early and waits, keeping the claim alive), and the claim must last until
 * `fireTime + tolerance` even if this instance dies while running — true at once unless the wait
 * was longer than `lockAtMostFor`, else one renewal makes it so. `false` if the claim was lost.
 */
async function reachFireTime(
  spec: OnceSpec,
  claim: OnceClaim,
  fire: number,
  signal: AbortSignal,
  clock: Clock,
): Promise<boolean> {
  if (claim.acquiredAt >= fire) return true;
  // The grant came at store time acquiredAt, before its answer arrived: after this wait the
  // store clock has passed `fire`.
  await clock.sleep(fire - claim.acquiredAt, signal);
  if (signal.aborted) return false;
  if (claim.expiresAt >= fire + spec.toleranceMs) return true;
  try {
    return (await claim.extend(spec.leaseMs)) && !signal.aborted;
  } catch {
    return false;
  }
}
