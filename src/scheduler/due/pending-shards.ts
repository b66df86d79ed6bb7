import { type CompiledExclude, isExcluded } from '../../schedule/exclude.js';
import { doneHold } from '../claim/high-water.js';
import type { StoredScheduleRecord } from '../control/schedule-input.js';
import { type Candidate, type Job, shardsOf, startOf } from '../internal-types.js';
import { keys } from '../keys.js';
import type { NodeState } from '../node-state.js';

/** A fire time of a sharded stored schedule whose shards after shard 0 a due entry offers again. */
export interface PendingFire {
  fireTime: number;
  /** Its start (fire time plus jitter). */
  at: number;
}

/** What a moved entry's value says of them: the fire time before (`pending`, as ever) and older ones still carried. */
export interface PendingValue {
  pending: PendingFire;
  pendingBefore?: PendingFire[];
}

/** What of a due entry (due-entry.ts) its shard memory needs. */
interface ShardedEntry {
  fireTime: number;
  at: number;
  schedule: StoredScheduleRecord;
  exclude?: CompiledExclude;
  readAt: number;
  pending?: PendingFire[] | undefined;
}

/** Older fire times carried at most (a schedule firing every few seconds with long leases). */
const MAX_CARRIED = 8;
/** Beyond two leases: a poll, a stall, a late timer. */
const CARRY_SLACK_MS = 1_000;

/**
 * The moved entry's memory of shards (`DueEntry.pending`): fire time F, whose shard 0 moves the
 * entry on (`withThis`: the move runs F), and the older fire times the entry remembered that are
 * still within two leases and a second of their start. A shard of F claimed and never started —
 * its node died before the start, and every node that was refused it watched it only in memory
 * (claim/watch.ts) and died too — is found again by the reader of a later entry only while that
 * entry still names F: when each entry remembered one fire time back, two crashes lost it
 * (simulator, busy fleet, seed 16: n3 claimed shs/s3@+2 s's shards and died; n2 was refused
 * shard 1, moved the entry past +4 s and died; no read met +2 s again). A claim of F's shard is made when a node reads an entry naming F, so by
 * two leases after F's start the first claimers' leases have ended, a refused node's look has come
 * (a lease and a second after its refusal), and a later reader that wins the shard runs it at once.
 */
export function pendingAfter(
  job: Job,
  e: ShardedEntry,
  now: number,
  withThis: boolean,
): PendingValue | undefined {
  const window = 2 * job.spec.lockAtMostForMs + CARRY_SLACK_MS;
  const before = (e.pending ?? []).filter((p) => p.fireTime < e.fireTime && now - p.at < window);
  // Settled unrun (`withThis` false): this fire time has no shards to offer; the older ones stay.
  const list = (withThis ? [{ fireTime: e.fireTime, at: e.at }, ...before] : before).slice(
    0,
    MAX_CARRIED + 1,
  );
  if (list.length === 0) return undefined;
  return { pending: list[0]!, ...(list.length > 1 && { pendingBefore: list.slice(1) }) };
}

/** The fire times a moved entry's value remembers (newest first); values written before `pendingBefore` name one. */
export function pendingOf(v: Partial<PendingValue>): PendingFire[] | undefined {
  if (v.pending === undefined) return undefined;
  return [v.pending, ...(v.pendingBefore ?? [])];
}

/**
 * The shards after shard 0 of the fire times the entry remembers (DueEntry.pending), offered again
 * with it — only while such a fire time's "done" holds surely last (half a done hold after its
 * start): a shard that ran is then refused by its hold. Later (a schedule that fires less often
 * than that: the entry comes due a day after, say) a shard that ran could be granted again — the
 * takeover's look for it on record (claim.ts) would still refuse it, but costs reads — so none is
 * offered.
 */
export function pendingShards(state: NodeState, job: Job, e: ShardedEntry, now: number): Candidate[] {
  const out: Candidate[] = [];
  const s = e.schedule;
  const fires = e.pending ?? [];
  // Oldest first (the memory is newest first): within a shard's gate, an older fire time goes
  // before a newer one; a fire time's shards in order, as before the memory held more than one.
  for (let i = fires.length - 1; i >= 0; i--) {
    const p = fires[i]!;
    if (now - p.at >= doneHold(job) / 2) continue;
    const excluded = e.exclude !== undefined && isExcluded(e.exclude, p.fireTime, state.calendars.lookup);
    for (const shard of shardsOf(job).slice(1)) {
      const occ = { job: s.job, scheduleId: s.id, fireTime: p.fireTime, shard };
      // Refused to this node before (held by another: running, or "done" — nearly always) and
      // watched until its holder's lease would end (claim/watch.ts), which runs it if the holder
      // never did: not claimed again meanwhile. Offered at each read, such a shard took a fleet
      // permit of a limited job for a whole tick, oldest first, ahead of the work that could run
      // (simulator, a slow machine, seed 1: `capped`'s shards of +14 s, run at 24 s, claimed and
      // refused at 29-33 s while the job's fire times fell 10 s behind).
      //
      // And one a takeover's look found on record (run, running or queued: {@link accountedShard}):
      // each offer took a permit for a tick and its look a read, and gave the permit back unused —
      // at every read of every node, while the entry remembered the fire time (simulator, a slow
      // machine, seed 3: `capped`'s permits went to shards of +2 s at 8-9 s, its +8 s waited).
      const key = keys.occurrence(occ);
      if (state.watchedClaims.has(key) || state.accountedShards.holds(key, now)) continue;
      out.push({
        occ,
        ...(p.at !== p.fireTime && { scheduledAt: p.at }),
        source: 'schedule' as const,
        data: s.data,
        attempt: 1,
        gate: job.spec.overlap !== 'allow' && !excluded,
        ...(excluded && { excluded: true as const }),
        entryReadAt: e.readAt,
      });
    }
  }
  return out;
}

/**
 * A takeover of `c` found it on record (claim/takeovers-on-record.ts): a shard of a stored
 * schedule's remembered fire time is not offered again for as long as {@link pendingShards} would
 * offer it.
 */
export function accountedShard(state: NodeState, c: Candidate): void {
  const job = state.defined.get(c.occ.job);
  if (!job || c.occ.scheduleId === undefined || c.occ.shard === undefined) return;
  const now = state.storeClock.estimate();
  state.accountedShards.hold(keys.occurrence(c.occ), startOf(c) + doneHold(job) / 2, now);
}
