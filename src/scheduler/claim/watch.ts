import { movePastHeld } from '../due/move-past.js';
import { type Candidate, movesEntry, type WatchedClaim } from '../internal-types.js';
import { keys } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { isHold } from './backfill-claim.js';
import { heldNotDone } from './high-water.js';
import { offerAgain } from './unanswered.js';

/** Refused claims watched at most (the oldest are dropped first). */
const MAX_WATCHED = 1_000;
/** Watched claims looked at per tick at most. */
const MAX_PER_TICK = 256;
/** Looked at this long after the holder's lease would have ended without a keep-alive. */
const SLACK_MS = 1_000;

/**
 * Fire times of the jobs' own triggers whose claim another node won: looked at again once that
 * node's lease would have ended. A holder that died (or was cut off for good) between its claim
 * and its run's start record leaves no in-flight record for recovery to find, every other node
 * moved past the fire time when it was refused, and a later run's high-water mark hides it from
 * every misfire scan: without this look, nobody would run or record it (found by the simulator:
 * a node crashed right after its acquire was applied).
 *
 * At the look, the fire time is accounted for when its occurrence is held (running, or "done"),
 * when it has a history record (run or skipped), an in-flight record (recovery's), or is the
 * queued run of its gate; otherwise it was claimed and never started, and is run as a recovery
 * (see {@link offerAgain}). Several nodes may look at once: the claim decides, as always.
 * A due entry's claim that moves it on needs no watch — the entry moves on only when that run
 * starts — except a claim of a missed fire time, looked at once at the next tick: held "done" by a
 * run that moved no entry (a backfill's), the entry is moved past it (due/move-past.ts). A sharded
 * stored schedule's other shard items are watched like a job trigger's fire times (once shard 0
 * has moved the entry, no read finds them again).
 * Cost: a few reads per fire time (or shard item) another node won.
 */
export class Watch {
  /** The watched claims by occurrence key (kept on NodeState: due reads skip them). */
  private readonly watched: Map<string, WatchedClaim>;

  constructor(private readonly state: NodeState) {
    this.watched = state.watchedClaims;
  }

  /** A claim of a job trigger's fire time (or shard item) was refused: someone else holds the occurrence. */
  refused(c: Candidate): void {
    // A due entry's claim of a missed fire time: looked at the next tick, for a "done" hold of a
    // run that did not move the entry (due/move-past.ts).
    if (c.movePast !== undefined) {
      this.add(c, this.state.clock.monotonic());
      return;
    }
    if (c.entryReadAt !== undefined && movesEntry(c)) return;
    // A recovery of a claim that never started is watched too: the node that won it may die or
    // be cut off before it starts it or queues it (simulator seed 405 of the 200-seed mix).
    if (c.source !== 'schedule' && c.source !== 'misfire' && !c.unstarted) return;
    const job = this.state.defined.get(c.occ.job);
    if (!job) return;
    this.add(c, this.state.clock.monotonic() + job.spec.lockAtMostForMs + SLACK_MS);
  }

  /** Watches `c` (unless its occurrence is watched already), first looked at local monotonic time `at`. */
  private add(c: Candidate, at: number): void {
    const key = keys.occurrence(c.occ);
    if (this.watched.has(key)) return;
    this.watched.set(key, { c, at });
    for (const k of this.watched.keys()) {
      if (this.watched.size <= MAX_WATCHED) break;
      this.watched.delete(k);
    }
  }

  /** Looks at the watched claims whose holder's lease has ended; throws (keeping them) if the store fails. */
  async check(): Promise<void> {
    const s = this.state;
    const now = s.clock.monotonic();
    const due: [string, WatchedClaim][] = [];
    for (const [key, w] of this.watched) {
      if (due.length >= MAX_PER_TICK) break;
      if (w.at <= now) due.push([key, w]);
    }
    if (due.length === 0) return;
    // One look-up each, all at once (the store's pool spreads them); the rest at the next tick.
    const leases = await Promise.all(due.map(([key]) => s.store.inspect(key)));
    for (const [i, [key, w]] of due.entries()) {
      const job = s.defined.get(w.c.occ.job);
      const lease = leases[i] ?? null;
      if (!job) {
        this.watched.delete(key);
      } else if (w.c.movePast !== undefined) {
        // Running (or claimed anew): looked at again when that lease would end. Held "done":
        // handled, and the entry moves past it if it still names it. Free: the entry is read again.
        if (lease !== null && !isHold(s, lease, job.spec.lockAtMostForMs)) {
          w.at = now + Math.max(0, lease.expiresAt - s.storeClock.estimate()) + SLACK_MS;
          continue;
        }
        if (lease !== null) await movePastHeld(s, w.c.movePast, w.c.occ);
        this.watched.delete(key);
      } else if (lease !== null) {
        // "Done" (a hold far past the fire time): accounted for. Else still running or
        // claimed anew: look again when that lease would end.
        const storeNow = s.storeClock.estimate();
        if (!heldNotDone(lease, w.c.occ.fireTime, job)) this.watched.delete(key);
        else w.at = now + Math.max(0, lease.expiresAt - storeNow) + SLACK_MS;
      } else {
        this.watched.delete(key);
        await offerAgain(s, w.c, false);
      }
    }
  }
}
