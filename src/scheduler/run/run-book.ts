import { KeepAlive, safetyMargin } from '../../lock/keep-alive.js';
import type { WriteOp } from '../../store/types.js';
import { doneUntil } from '../claim/high-water.js';
import { keys } from '../keys.js';
import { InvokedMark, runMarkKey } from './invoked-mark.js';
import { storeTimeNow } from './run-fields.js';
import { RunLeases } from './run-leases.js';
import type { Claim, RunDeps } from './run-records.js';

/**
 * How one run keeps its claim and records itself — what differs between a run claimed on its own
 * (its occurrence lease, gate, in-flight record) and a run that is one item of a page (the page's
 * lease and record cover it: page/page-book.ts). `executeRun` asks it; everything else about a
 * run (attempts, retries, timeout, events) is the same.
 */
export interface RunBook {
  /**
   * Starts keeping the claim alive; `onLost` (once) when it cannot. `held()`: whether the claim
   * surely still holds now (its local deadline, less a safety margin, has not passed), asked just
   * before a handler starts. `fresh()` (a claim of its own, not a page's): renews first when
   * little of the lease is left (KeepAlive.fresh), awaited before a handler starts; `false` when
   * the claim is lost.
   */
  keep(onLost: (reason: unknown) => void): {
    stop(): Promise<void>;
    held(): boolean;
    fresh?(): Promise<boolean>;
  };
  /**
   * The writes stored (retried while the claim holds) before attempt `attempt` starts; `value` is
   * its in-flight record, made only if `wantsInflight`. `[]`: nothing to wait for.
   */
  startOps(first: boolean, value: string | undefined): WriteOp[];
  /** Whether startOps needs the in-flight record's JSON. */
  readonly wantsInflight: boolean;
  /**
   * The writes that close a run whose outcome is `history` (retried until stored), and which of
   * them answers `false` when the claim had lapsed before they were stored (the at-least-once case).
   */
  finishOps(
    history: WriteOp | undefined,
    inflightValue: string | undefined,
  ): { ops: WriteOp[]; lapse?: number };
  /** How long the finishing batch may wait for other runs' to share a store call (WriteBatcher.submit). */
  readonly finishLingerMs?: number;
  /**
   * Asked once the outcome is stored, when `finishOps` names no `lapse` op: whether the claim may
   * have lapsed before it was (the at-least-once case, marked `leaseLapsed` in the history).
   */
  lapsed?(): boolean;
  /** The writes after a run abandoned or never started (one try; the claim ends on its own otherwise). */
  abandonOps(history: WriteOp | undefined): WriteOp[];
  /**
   * The run is over: `stored` = its outcome is on record; `false` = abandoned or not started. The
   * run lasts until what this returns settles (a page's last run carries the page's finish, so
   * that stop() waits for it).
   */
  ended?(stored: boolean): Promise<void> | undefined;
  /**
   * A handler of `claim` was called, that was to start at `start` (store ms): its holder's mark
   * (invoked-mark.ts) says so, lazily — what a judge of a later fire time of its gate asks before
   * it skips one naming this run.
   */
  invoked?(claim: Claim, start: number): void;
  /**
   * (A page's) `claim`'s handler may be called well after the page's others — it waits for a
   * start in the rate window first (fleet-limits.ts rateStart): the page's mark gives it its own
   * call time, not the page's first. Called in the turn the run was launched, so that no mark
   * written meanwhile covers it.
   */
  callsLate?(claim: Claim): void;
  /**
   * (A run claimed on its own: it owns its mark) the run is over; resolves to the mark's delete for
   * its finish batch, if one was written (`keep`: abandoned — the mark stays for its recovery).
   */
  endMark?(keep: boolean): Promise<WriteOp | undefined>;
}

/**
 * The book of a run claimed on its own: an occurrence lease and an overlap gate kept alive
 * together; an in-flight record (with the high-water mark) before each attempt; one finishing batch
 * of history, in-flight delete (only as this run wrote it) and the releases — the occurrence held
 * "done", the gate held for lockAtLeastFor.
 */
export function claimBook(deps: RunDeps, claim: Claim): RunBook {
  const { spec } = deps;
  const releases = (hold: boolean): WriteOp[] => {
    const ops: WriteOp[] = [
      hold
        ? {
            op: 'release',
            key: claim.lease.key,
            token: claim.lease.token,
            holdUntil: Math.max(
              doneUntil(
                claim.occ.fireTime,
                claim.lease,
                claim.sentAt,
                deps.clock.monotonic(),
                deps.doneHoldMs,
              ),
              claim.lease.acquiredAt + spec.lockAtLeastForMs,
            ),
          }
        : { op: 'release', key: claim.lease.key, token: claim.lease.token },
    ];
    // The gate honours lockAtLeastFor; a hold in the past frees it at once.
    if (claim.gate)
      ops.push({
        op: 'release',
        key: claim.gate.key,
        token: claim.gate.token,
        holdUntil: claim.gate.acquiredAt + spec.lockAtLeastForMs,
      });
    return ops;
  };
  const inflightKey = keys.inflight(claim.occ);
  // Made at its first handler's call only (most runs end before it writes anything).
  let mark: InvokedMark | undefined;
  return {
    wantsInflight: true,
    invoked(_claim, start) {
      mark ??= new InvokedMark(
        deps.clock,
        deps.writes,
        runMarkKey(claim.occ, claim.lease.token),
        deps.historyRetentionMs,
      );
      mark.invoked(start, storeTimeNow(claim, deps.clock));
    },
    endMark: async (keep) => mark?.end(keep),
    keep(onLost) {
      // One keep-alive for the claim and its gate: both leases have the same length and are
      // renewed together (one keep-alive per run halves the timers and signals 1,000 runs cost).
      const leases = new RunLeases(deps.store, deps.clock, claim.lease, claim.gate, claim.sentAt);
      const keeper = new KeepAlive(leases, {
        leaseMs: spec.lockAtMostForMs,
        renew: true,
        clock: deps.clock,
        logger: deps.logger,
        onLost,
      });
      const margin = safetyMargin(spec.lockAtMostForMs);
      return {
        stop: () => keeper.stop(),
        held: () => deps.clock.monotonic() < leases.localDeadline - margin,
        // Less than a third left (a claim adopted late, a start record retried, a wait for a
        // rate window): renewed before the handler starts, so a freeze right after the start
        // does not outlast the lease. A run started on time never waits here.
        fresh: () => keeper.fresh(spec.lockAtMostForMs / 3),
      };
    },
    startOps(first, value) {
      const ops: WriteOp[] = first && claim.startWrites ? [...claim.startWrites] : [];
      ops.push({ op: 'put', key: inflightKey, value: value! });
      // A backfill's fire time is in the past: the mark is a plain put and would move back. A
      // recovery of a run that started (`runningSince`) writes none either: that run's start
      // wrote it with the in-flight record being recovered, or — a backfill — rightly did not
      // (a recovered backfill run moved the mark back, and a node started later replayed a fire
      // time that had run as a misfire: test/backfill-recovery.test.ts).
      const highWater =
        first && claim.source !== 'backfill' && claim.runningSince === undefined
          ? deps.highWater(claim.occ)
          : undefined;
      if (highWater) ops.push(highWater);
      return ops;
    },
    finishOps(history, inflightValue) {
      const frees = releases(true);
      const ops: WriteOp[] = [
        ...(history ? [history] : []),
        { op: 'delete', key: inflightKey, ...(inflightValue !== undefined && { ifValue: inflightValue }) },
        ...frees,
      ];
      // The occurrence's release (the first of `frees`) is refused when its lease had lapsed.
      return { ops, lapse: ops.length - frees.length };
    },
    abandonOps(history) {
      return [...(history ? [history] : []), ...releases(false)];
    },
  };
}
