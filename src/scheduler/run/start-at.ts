import type { Clock } from '../../core/clock.js';

/**
 * Runs claimed ahead (due/claim-lead.ts) wait for their start on a grid this fine: the runs of one
 * fire time share one timer, and their handlers start in one turn of the event loop, each after
 * the preamble of the runs before it (not after their whole finish, as one timer per run gave:
 * with 333 runs per node the last handler started ~80 ms after the first).
 */
const START_GRID_MS = 2;
/**
 * How much faster than the store's this node's clock may run (the simulator's worst drift): a
 * wait of `d` ms on the store's clock is `d × (1 + margin)` here.
 */
const DRIFT_MARGIN = 0.02;

/**
 * How long this node waits, on its own clock, for `storeMs` to pass on the store's (the drift
 * margin, rounded up, plus 1 ms): a start `storeMs` after a grant is surely reached that long
 * after the grant's answer arrived (page-starts.ts, claim/early-grant.ts).
 */
export function localWaitFor(storeMs: number): number {
  return Math.ceil(storeMs * (1 + DRIFT_MARGIN)) + 1;
}

interface NodeWaits {
  /** The local monotonic time from which each start (store time, on the grid) has surely passed. */
  readonly bounds: Map<number, Promise<number>>;
  /** Shared wake-ups by local grid time. */
  readonly wakeUps: Map<number, Promise<void>>;
}

/** Per clock: a node, or a simulated node. */
const waits = new WeakMap<Clock, NodeWaits>();

/**
 * Resolves once `start` (store time) has surely passed on the store's clock: at the earlier of
 * `notBefore` (the run's own bound, monotonic: from its grant's `acquiredAt`, which the store
 * stamps when its claim statement begins — up to that statement's whole duration early, 30–50 ms
 * for 1,000 leases) and the bound of one store clock read shared by every run with that start
 * (`readStore`, its answer taken as the store's time when it arrived: the read happened before).
 * A failed or slow read leaves `notBefore`.
 */
export async function startAt(
  clock: Clock,
  readStore: () => Promise<number>,
  start: number,
  notBefore: number,
): Promise<void> {
  let node = waits.get(clock);
  if (node === undefined) {
    node = { bounds: new Map(), wakeUps: new Map() };
    waits.set(clock, node);
  }
  const key = Math.ceil(start / START_GRID_MS) * START_GRID_MS;
  let bound = node.bounds.get(key);
  if (bound === undefined) {
    const bounds = node.bounds;
    bound = readStore().then(
      (storeNow) => clock.monotonic() + Math.max(0, key - storeNow) * (1 + DRIFT_MARGIN) + 1,
      () => Number.POSITIVE_INFINITY,
    );
    bounds.set(key, bound);
    // Forgotten once its start has passed (a later run with that start waits by its own bound).
    void bound.then((at) => {
      const left = Number.isFinite(at) ? at - clock.monotonic() : 0;
      void clock.sleep(Math.max(0, left)).then(() => bounds.delete(key));
    });
  }
  // Never later than the run's own bound, however long the read takes (an outage, a partition).
  const own = wakeUp(node.wakeUps, clock, notBefore).then(() => notBefore);
  const at = Math.min(notBefore, await Promise.race([bound, own]));
  if (at > clock.monotonic()) await wakeUp(node.wakeUps, clock, at);
}

/** Resolves at monotonic time `at` on `clock` (rounded up to the grid), one timer per grid time. */
function wakeUp(wakeUps: Map<number, Promise<void>>, clock: Clock, at: number): Promise<void> {
  const slot = Math.ceil(at / START_GRID_MS) * START_GRID_MS;
  const known = wakeUps.get(slot);
  if (known !== undefined) return known;
  const wake = clock.sleep(Math.max(0, slot - clock.monotonic())).then(() => {
    wakeUps.delete(slot);
  });
  wakeUps.set(slot, wake);
  return wake;
}
