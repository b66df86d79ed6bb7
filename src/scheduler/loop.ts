import { INTERNAL_ABORT } from '../core/signals.js';
import type { Feed } from './control/feed.js';
import { sourceLead } from './due/claim-lead.js';
import type { Due } from './due/due.js';
import { sourceStart } from './due/jittered.js';
import { nextDue } from './due/source-times.js';
import { type NodeState, sharedController } from './node-state.js';

/** Timers never sleep longer than this without re-checking the time. */
const MAX_SLEEP_MS = 30_000;

/** The node's timing loop: poll when a poll is due, tick, sleep until the next event (or a poke); back off while the store fails. */
export class Loop {
  constructor(
    private readonly state: NodeState,
    private readonly feed: Feed,
    private readonly due: Due,
  ) {}

  /** Runs until `state.stopping` aborts. */
  async loop(): Promise<void> {
    const s = this.state;
    const stopping = s.stopping!.signal;
    while (!stopping.aborted) {
      let sleepMs: number;
      try {
        const now = s.storeClock.estimate();
        if (now >= s.nextPollAt) await this.feed.poll();
        await this.due.tick();
        sleepMs = this.untilNextEvent();
        // Work left due for want of slots, and slots free again (claims refused or skipped, runs
        // already over): tick again at once. Each such tick claims something, so this never spins.
        if (this.due.backlog && s.freeSlots() > 0) sleepMs = 0;
        if (s.failures > 0) {
          s.storeBack.abort(INTERNAL_ABORT);
          s.storeBack = sharedController();
        }
        s.failures = 0;
        s.answeredSinceFailure = false;
      } catch (err) {
        // Failures in a row count up the back-off, unless the store answered in between.
        s.failures = s.answeredSinceFailure ? 1 : s.failures + 1;
        s.answeredSinceFailure = false;
        s.emit('error', { error: err, during: 'scheduler loop' });
        // Bounded back-off while the store is unreachable; the misfire policy covers what falls due meanwhile.
        sleepMs = Math.min(MAX_SLEEP_MS, 250 * 2 ** Math.min(s.failures, 7));
      }
      if (stopping.aborted) break;
      s.wake.controller = new AbortController();
      await s.clock.sleep(Math.max(0, Math.min(sleepMs, MAX_SLEEP_MS)), s.wake.controller.signal);
    }
  }

  /** Milliseconds until the next fire time that this node could claim (or due index read), or the next poll. */
  private untilNextEvent(): number {
    const s = this.state;
    const now = s.storeClock.estimate();
    let next = s.nextPollAt;
    for (const source of s.sources.values()) {
      // A fire time the last tick already saw but could not claim (no free slot, a catch-up
      // replay waiting for its predecessor) is retried when a run ends, at the next poll, or at
      // once when slots are free again after a tick that ran out of them (`backlog`), not in a
      // busy loop.
      const fire = nextDue(source, now);
      // Its start: the fire time plus the trigger's jitter, less the claim lead (claim-lead.ts).
      const start = fire === undefined ? undefined : sourceStart(source, fire);
      const job = s.defined.get(source.job);
      const lead = job === undefined || fire === undefined ? 0 : sourceLead(s, job, source, fire);
      const due = start === undefined ? undefined : start - lead;
      if (due !== undefined && due > s.lastTickAt) next = Math.min(next, due);
    }
    // The due index: its next entry, a read it owes (while there are free slots to claim with: a
    // full node is woken by its runs ending).
    if (s.freeSlots() > 0) next = Math.min(next, this.due.index.wakeAt());
    // What the last tick held back for another node to go first: claimable here after the grace.
    if (s.freeSlots() > 0) next = Math.min(next, this.due.wakeAt);
    // Wake a little after the fire time: the store clock estimate is only good to ± errorBound,
    // and a claim granted before the fire time would be early.
    return next - now + Math.ceil(s.storeClock.errorBound());
  }
}
