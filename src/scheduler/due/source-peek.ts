import { type Job, type Source, shardsOf } from '../internal-types.js';
import type { NodeState } from '../node-state.js';
import { sourceStart } from './jittered.js';
import { graceAt, nextDue } from './source-times.js';

/**
 * The starts (fire time plus jitter) of a job trigger's work claimable here now, one per shard
 * item, looked at without taking anything: what a reservation of a limited job asks permits for
 * (due-permits.ts), as entry-peek.ts does for a due entry. Its queued fire times' shards, then its
 * next fire time's, each counted only when this node goes first for it (spread.ts) or its grace
 * is over, or when it is this node's on-time share within the claim lead (`lead`, as `take`
 * claims ahead). `undefined`: not known before a take — the next fire time missed (the misfire
 * policy decides what runs).
 *
 * Why: a sharded job trigger asked its job's permits for all its shards on every node, though each
 * node claims only its share at first. With `rateLimit: { max: 8, per: '1s' }` and four shards,
 * each node of three reserved four starts a second; the window was full of reservations given
 * back only after the tick's claims (slower still when the node stalled), and what waited for
 * permits — misfire replays, backfilled fire times — waited for seconds while the job started one
 * or two runs a second (simulator, `jqa,jrep,jrl`, busy faults, seed 29: two fire times of shard 3
 * never ran; the same with `maxConcurrency`: docs/simulator.md, finding 37).
 */
export function sourceClaimable(
  state: NodeState,
  job: Job,
  source: Source,
  now: number,
  lead: number,
): number[] | undefined {
  const count = job.spec.shards?.count;
  const starts: number[] = [];
  const claimable = (
    fireTime: number,
    shard: number | undefined,
    graceMs: number,
    start: number,
    onTime: boolean,
  ) => {
    const occ = { job: source.job, scheduleId: source.scheduleId, fireTime, shard };
    const at = state.spread.claimableAt(occ, count, graceMs, start);
    return at <= now || (onTime && at === start && at <= now + lead);
  };
  for (const q of source.queue) {
    const start = q.at ?? q.fireTime;
    for (const shard of q.shards)
      if (claimable(q.fireTime, shard, q.graceMs, start, q.source === 'schedule')) starts.push(start);
  }
  const next = nextDue(source, now);
  if (next === undefined) return starts;
  const start = sourceStart(source, next);
  if (start > now + lead) return starts;
  if (start < now - job.spec.misfireThresholdMs) return undefined;
  const grace = graceAt(source, next);
  for (const shard of shardsOf(job)) if (claimable(next, shard, grace, start, true)) starts.push(start);
  return starts;
}
