import { ExpiringKeys } from '../../core/expiring-keys.js';
import { accountedFor } from '../claim/on-record.js';
import type { QueuedOccurrence, Source } from '../internal-types.js';
import { keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';

/** A shard looked up is not looked up again for this long (store time). */
const LOOK_AGAIN_MS = 300;
/** Shards looked up per look at most. */
const MAX_PER_LOOK = 64;

/**
 * Takeovers of a limited job trigger's shards (another node's share, claimable here after its
 * grace: spread.ts) that are already on record elsewhere, dropped from this node's queue before it
 * asks the fleet for permits for them.
 *
 * Why: under a backlog every node queues every shard of each fire time; past the grace each node
 * asked permits for the other nodes' shards too, won some, and only then (claim/takeovers-on-
 * record.ts) found them run elsewhere and gave the permits back — meanwhile its place in line, as
 * old as those shards, held the permits away from work that could use them. Simulator, no
 * faults, 4 nodes, a job trigger in 4 shards a second under `maxConcurrency: 2` (runs of 100-600 ms,
 * 1.4 runs at once of demand; seeds 1-5): 1.10-1.24 handlers at once, 96-103 of 116 shards run,
 * starts 2.8-3.6 s late on average; with this 1.25-1.31, 100-108, 1.3-2.5 s. (One node alone runs
 * all 116, 0.25 s late: what is left is the permits' hand-over between nodes.)
 *
 * The look goes in the background, at most one at a time, and its answer is used when it comes:
 * a due tick never waits for it (a tick that waited for one more store call fell behind under the
 * fault mix). Dropping early is the decision the claim makes anyway: a shard on record (history,
 * in-flight or pending record) stays on record — run, recovered or queued behind its gate — so a
 * look a tick old says what the claim would find. A shard not on record stays queued and is
 * claimed as before; one whose look fails or never answers too.
 */
export class LimitedTakeovers {
  private looking = false;
  private readonly looked = new ExpiringKeys(1_000);

  constructor(private readonly state: NodeState) {}

  /** Starts a look at the limited job triggers' queued takeovers, unless one is under way (store time `now`). */
  look(now: number): void {
    if (this.looking) return;
    const found = this.takeovers(now);
    if (found.length === 0) return;
    this.looking = true;
    accountedFor(
      this.state,
      found.map((f) => f.occ),
    )
      .then(
        (on) => {
          found.forEach((f, i) => {
            if (on[i]) drop(f);
          });
        },
        () => {}, // the claims meet the store's answer as before
      )
      .finally(() => {
        this.looking = false;
      });
  }

  /** Queued shards of limited job triggers claimable here now as takeovers, not looked up lately. */
  private takeovers(now: number): Found[] {
    const s = this.state;
    const out: Found[] = [];
    for (const source of s.sources.values()) {
      if (source.queue.length === 0) continue;
      const job = s.defined.get(source.job);
      if (!job || !s.limits.limited(job.spec)) continue;
      const count = job.spec.shards?.count;
      for (const q of source.queue) {
        if (q.source === 'recover') continue;
        const start = q.at ?? q.fireTime;
        for (const shard of q.shards) {
          const occ = { job: source.job, scheduleId: source.scheduleId, fireTime: q.fireTime, shard };
          const at = s.spread.claimableAt(occ, count, q.graceMs, start);
          if (at <= start || at > now) continue; // this node's own share, or not claimable yet
          const key = keys.occurrence(occ);
          if (this.looked.holds(key, now)) continue;
          this.looked.hold(key, now + LOOK_AGAIN_MS, now);
          out.push({ source, q, occ });
          if (out.length >= MAX_PER_LOOK) return out;
        }
      }
    }
    return out;
  }
}

/** A takeover looked up: its source, its queued occurrence, and the shard's occurrence. */
interface Found {
  source: Source;
  q: QueuedOccurrence;
  occ: OccurrenceId;
}

/**
 * Takes the shard out of its queued occurrence, if still there (a take may have offered it since,
 * or put back a copy of the queue: queue-undo.ts — then the shard is looked up again later).
 */
function drop({ source, q, occ }: Found): void {
  if (!q.shards.includes(occ.shard)) return;
  q.shards = q.shards.filter((shard) => shard !== occ.shard);
  if (q.shards.length === 0) source.queue = source.queue.filter((x) => x !== q);
}
