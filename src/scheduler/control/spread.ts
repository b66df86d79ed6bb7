import { FNV_OFFSET, fnv1a, hash32, mix32 } from '../../core/hash.js';
import type { StoredRecord } from '../../store/types.js';
import type { OccurrenceId } from '../keys.js';

/**
 * How long a node that is not an occurrence's preferred node waits after the fire time before it
 * claims the occurrence itself (the preferred node died, stopped, is overloaded, or this node's
 * live list disagrees with the others'). One second: long enough for a preferred node on a busy
 * machine to wake, poll and get its batched acquire in (the default poll interval), short enough
 * that a dead node's share runs a second late until its heartbeat drops out. Misfire classing
 * counts lateness from the time an occurrence became claimable here, so a takeover after the grace
 * is on time, not missed (see {@link Spread.graceFor}).
 */
export const SPREAD_GRACE_MS = 1_000;

/**
 * The grace for an occurrence whose trigger fires again `intervalMs` later: {@link SPREAD_GRACE_MS},
 * but never more than a quarter of the interval. A takeover after a grace as long as the interval
 * would fall on the next fire time, and the two runs would meet at the overlap gate (the older one
 * skipped, or the newer); a quarter leaves the taken-over run three quarters of the interval to end
 * before the next one starts. `undefined` (a one-off) gets the full grace.
 */
export function spreadGrace(intervalMs: number | undefined): number {
  if (intervalMs === undefined || !(intervalMs > 0)) return SPREAD_GRACE_MS;
  return Math.min(SPREAD_GRACE_MS, Math.floor(intervalMs / 4));
}

/** A heartbeat record as spread reads it (feed.ts writes it). */
interface Beat {
  id: string;
  lastSeen: number;
  jobs?: string[];
  /** The node is stopping (draining): it claims nothing more. */
  stopping?: boolean;
  /** Its heartbeat interval: a node that missed two beats (and a second) is not live. */
  beatMs?: number;
}

/**
 * Which live node goes first for an occurrence or a shard item, so that occurrences due together
 * and the shard items of one occurrence are spread over the nodes instead of taken by whichever
 * wakes first.
 *
 * The live list: this node's poll scans the `node|` heartbeats each time it writes its own (every
 * five polls, at most 5 s), and again at the next poll after a scan that changed the list
 * (feed.ts: nodes started together settle on one list within a poll or two); a node is live for a
 * job if its heartbeat is fresh, not marked stopping, and lists the job among those it defines.
 * This node always counts itself (unless stopping), with the jobs it defines now.
 *
 * Preference, the same on every node that has the same list: an occurrence goes to the node of
 * highest rendezvous weight, hash(node, occurrence) — a join or leave moves only the occurrences
 * of that node; shard item i of an occurrence goes to the sorted eligible nodes[(i + offset) mod n],
 * with offset a hash of (job, schedule, fire time), ElasticJob's average allocation: 8 items on 4
 * nodes give exactly 2 each, and the remainder items rotate between occurrences.
 *
 * The preferred node claims at the fire time; every other node at the fire time plus its grace
 * ({@link spreadGrace}), if the occurrence is not on record by then (claim.ts reads that first;
 * one that is claimed but not yet on record is simply refused). Nothing here decides who runs:
 * the occurrence's lease does. Nodes may disagree on the live list for up to a heartbeat interval
 * (a join, a leave, a crash): then two nodes may both think they are preferred (the lease grants
 * one; the other is refused), or none is (every one claims after the grace). Either way no
 * occurrence runs twice — that comes from the claims, never from the hash — and a disagreement
 * costs at most one grace of delay.
 */
export class Spread {
  /** The other live nodes as last read, with the jobs each defines (undefined: not read yet — claim everything at once). */
  private others: { id: string; jobs: ReadonlySet<string> }[] | undefined;
  /** The live list of the last read, as a comparable text (ids and their jobs). */
  private seen: string | undefined;
  /** Eligible node ids per job, sorted, memoised until the next read or change of this node's jobs. */
  private readonly eligibleMemo = new Map<string, string[]>();
  /**
   * Per job, the FNV-1a states after `<node id>\0<job>|` of its eligible nodes (see `preferred`),
   * for the ids array `eligible` last returned (a new list makes a new array: the states follow).
   */
  private readonly jobStates = new Map<string, { ids: readonly string[]; states: number[] }>();
  private ownJobs: ReadonlySet<string> = new Set();
  private stopping = false;

  constructor(private readonly node: string) {}

  /**
   * The heartbeats a poll just scanned (`node|`), read at store time `now`. Returns whether the
   * live list (the other nodes and the jobs each defines) differs from the previous read's.
   */
  update(records: StoredRecord[], now: number): boolean {
    const others: Beat[] = [];
    for (const r of records) {
      let beat: Beat;
      try {
        beat = JSON.parse(r.value) as Beat;
      } catch {
        continue;
      }
      if (beat.id === this.node || beat.stopping) continue;
      if (now - beat.lastSeen > 2 * (beat.beatMs ?? 5_000) + 1_000) continue;
      others.push(beat);
    }
    const seen = others
      .map((b) => `${JSON.stringify(b.id)}:${JSON.stringify(b.jobs ?? [])}`)
      .sort()
      .join(',');
    const changed = seen !== this.seen;
    this.seen = seen;
    this.others = others.map((b) => ({ id: b.id, jobs: new Set(b.jobs ?? []) }));
    // The memo depends only on what `seen` spells (ids and their jobs): an unchanged read keeps it.
    // Rebuilt at every read, it cost each node a pass over every job of every other node per job
    // (1,000 jobs on 3 nodes: ~2,000,000 string comparisons at each heartbeat read).
    if (changed) {
      this.eligibleMemo.clear();
      this.jobStates.clear();
    }
    return changed;
  }

  /** This node's own state: the jobs it defines (the keys of its job map), and whether it is stopping. */
  self(jobs: ReadonlyMap<string, unknown>, stopping: boolean): void {
    // Called at every tick: compare without building anything while nothing changed.
    if (stopping === this.stopping && jobs.size === this.ownJobs.size) {
      let same = true;
      for (const job of jobs.keys()) {
        if (!this.ownJobs.has(job)) {
          same = false;
          break;
        }
      }
      if (same) return;
    }
    this.ownJobs = new Set(jobs.keys());
    this.stopping = stopping;
    this.eligibleMemo.clear();
  }

  /** The live nodes that define `job`, sorted by id (undefined until the first read). */
  eligible(job: string): string[] | undefined {
    if (this.others === undefined) return undefined;
    let ids = this.eligibleMemo.get(job);
    if (!ids) {
      ids = this.others.filter((b) => b.jobs.has(job)).map((b) => b.id);
      if (!this.stopping && this.ownJobs.has(job)) ids.push(this.node);
      ids = [...new Set(ids)].sort();
      this.eligibleMemo.set(job, ids);
    }
    return ids;
  }

  /** Every live node id known (this one included unless stopping), sorted: for tests and status. */
  live(): string[] {
    const ids = (this.others ?? []).map((b) => b.id);
    if (!this.stopping) ids.push(this.node);
    return [...new Set(ids)].sort();
  }

  /**
   * The extra lateness a job's occurrences are allowed on this node before they count as missed:
   * the grace when other nodes share the job (an occurrence may become claimable here only then),
   * none when this node runs it alone.
   */
  graceFor(job: string, graceMs: number): number {
    const ids = this.eligible(job);
    return ids === undefined || ids.length <= 1 ? 0 : graceMs;
  }

  /** The node that goes first for the occurrence (or shard item `occ.shard` of `shardCount`). */
  preferred(
    occ: Omit<OccurrenceId, 'shard'> & { shard?: number | undefined },
    shardCount?: number,
  ): string | undefined {
    const ids = this.eligible(occ.job);
    if (ids === undefined || ids.length === 0) return undefined;
    if (ids.length === 1) return ids[0];
    if (occ.shard !== undefined && shardCount !== undefined && shardCount > 1) {
      const offset = hash32(`${occ.job}|${occ.scheduleId ?? ''}|${occ.fireTime}`) % ids.length;
      return ids[(occ.shard + offset) % ids.length];
    }
    // Rendezvous weight of each node: hash32(`<node id>\0<job>|<schedule>|<fire time>`), computed
    // without building that string — FNV-1a runs left to right, so the state after `<node id>\0<job>|`
    // is kept per job and node (`weighing`) and only `<schedule>|<fire time>` is hashed per call
    // and node. Every due entry a node reads is weighed at each read (on four nodes, three
    // quarters of them another node's): with 40,000 due on 4 nodes the weighing was ~5 % of a
    // node's CPU by profile, a string of ~50 characters built per node and occurrence.
    const states = this.weighing(occ.job, ids);
    const rest = `${occ.scheduleId ?? ''}|${occ.fireTime}`;
    let best: string | undefined;
    let bestWeight = -1;
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k]!;
      const w = mix32(fnv1a(states[k]!, rest));
      if (w > bestWeight || (w === bestWeight && best !== undefined && id < best)) {
        best = id;
        bestWeight = w;
      }
    }
    return best;
  }

  /** The FNV-1a states after `<node id>\0<job>|` of `ids` (the job's eligible nodes, as `eligible` returned them). */
  private weighing(job: string, ids: readonly string[]): number[] {
    const memo = this.jobStates.get(job);
    if (memo !== undefined && memo.ids === ids) return memo.states;
    const states = ids.map((id) => fnv1a(FNV_OFFSET, `${id}\u0000${job}|`));
    this.jobStates.set(job, { ids, states });
    return states;
  }

  /**
   * Store time from which this node claims the occurrence: its start `at` (its fire time, or later
   * with jitter) if this node is its preferred node (or the live list is not known yet, or no live
   * node is eligible — e.g. this one's own heartbeat not read yet), else `at` plus `graceMs`
   * ({@link spreadGrace}).
   */
  claimableAt(occ: OccurrenceId, shardCount: number | undefined, graceMs: number, at = occ.fireTime): number {
    return this.goesFirst(occ, shardCount) ? at : at + graceMs;
  }

  /** This node is the occurrence's preferred node, or no preferred node is known (claim at once). */
  private goesFirst(
    occ: Omit<OccurrenceId, 'shard'> & { shard?: number | undefined },
    shardCount?: number,
  ): boolean {
    const preferred = this.preferred(occ, shardCount);
    return preferred === undefined || preferred === this.node;
  }

  /** This node goes first for at least one of the occurrence's shard items (or for the occurrence). */
  prefersAny(occ: Omit<OccurrenceId, 'shard'>, shardCount: number | undefined): boolean {
    if (shardCount === undefined || shardCount <= 1) return this.goesFirst(occ);
    const ids = this.eligible(occ.job);
    if (ids === undefined || ids.length <= 1) return true;
    const n = Math.min(shardCount, ids.length);
    for (let i = 0; i < n; i++)
      if (this.preferred({ ...occ, shard: i }, shardCount) === this.node) return true;
    return false;
  }
}
