import { OncelyError } from '../../core/errors.js';
import { gateOf, type OccurrenceId } from '../keys.js';

/**
 * Overlap 'replace': the runs of 'replace' jobs going on this node, by overlap gate key, each with
 * the controller that aborts its `ctx.signal`. Only runs of 'replace' jobs are registered, so no
 * other job pays for it.
 *
 * The cancel request is the pending record the newer fire time's claim writes anyway (it found
 * the gate held and queued itself, claim/overlap.ts): every node's poll reads the pending records
 * of the jobs it defines (control/requests.ts), and the node running an older fire time of that
 * gate aborts it here. No record of its own, no store call beyond the poll's.
 */
export type ReplaceableRuns = Map<string, Set<ReplaceableRun>>;

/** One run of a 'replace' job going on this node. */
export interface ReplaceableRun {
  readonly fireTime: number;
  readonly controller: AbortController;
}

/** Registers a run's attempt; `done()` when the attempt has ended. */
export function replaceable(
  runs: ReplaceableRuns,
  occ: OccurrenceId,
): { signal: AbortSignal; done: () => void } {
  const gate = gateOf(occ);
  const run: ReplaceableRun = { fireTime: occ.fireTime, controller: new AbortController() };
  const set = runs.get(gate) ?? new Set<ReplaceableRun>();
  runs.set(gate, set);
  set.add(run);
  return {
    signal: run.controller.signal,
    done: () => {
      set.delete(run);
      if (set.size === 0 && runs.get(gate) === set) runs.delete(gate);
    },
  };
}

/**
 * A fire time of `gate` is queued (a pending record read by a poll): every run of that gate going
 * here with an older fire time is aborted, reason an `OncelyError` with code `REPLACED`. The run
 * is not cut short: it ends when its handler does, and holds the gate until then.
 */
export function replaceOlder(runs: ReplaceableRuns, gate: string, job: string, fireTime: number): void {
  const set = runs.get(gate);
  if (!set) return;
  for (const run of set)
    if (run.fireTime < fireTime && !run.controller.signal.aborted)
      run.controller.abort(
        new OncelyError(
          'REPLACED',
          `job ${JSON.stringify(job)}: the run of ${new Date(run.fireTime).toISOString()} was replaced by the fire time ${new Date(fireTime).toISOString()} (overlap 'replace')`,
        ),
      );
}
