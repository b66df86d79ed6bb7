import type { Candidate, Source } from '../internal-types.js';
import type { NodeState } from '../node-state.js';

/*
 * What a tick undoes in a job trigger's source (its cursor and its queue of fire times taken and
 * not claimed yet) when what it took cannot go to a claim: the job was paused meanwhile, or the
 * tick failed half-way. Either way the fire times must be seen again, never dropped with the
 * tick: the cursor is past them, and no other node may be watching them.
 */

/**
 * A paused job's fire times queued on time and not claimed yet (held back for another node's
 * grace, or for want of slots) are dropped, and the cursor goes back before them: taken before
 * this node saw the pause, they were claimed at the resume as if on time, or beside the replay
 * (simulator: one job, run-once, two pauses, seed 579: +6 s, queued 250 ms ahead of it, was
 * claimed with the replay of +7 s; seed 5 of three jobs: +21 s). The resume's misfire handling
 * settles them with the other fire times the pause passed over. Replays and recoveries stay
 * queued: a claim of theirs is owed.
 */
export function dropOnTime(source: Source): void {
  let first = Number.POSITIVE_INFINITY;
  for (const q of source.queue) if (q.source === 'schedule') first = Math.min(first, q.fireTime);
  if (first === Number.POSITIVE_INFINITY) return;
  source.queue = source.queue.filter((q) => q.source !== 'schedule');
  source.cursor = Math.min(source.cursor ?? first, first - 1);
}

/**
 * A take that fails (a store call of a misfire's handling, a due entry's read) fails the tick,
 * and the candidates the tick's earlier takes made never reach a claim: the sources' cursors and
 * queues, and the recoveries waiting, go back to what they were before the tick, so that the next
 * tick offers them again. Without it, an occurrence drained from a source's queue was gone
 * (simulator: three jobs, pauses, the fault mix, seed 5: +21 s queued before the pause, drained
 * at the resume, then the misfire's high-water write lost its reply: nobody ran or recorded it).
 * What the failed take wrote stays written; what it settled is settled again, alike.
 */
export function unTake(
  s: NodeState,
  taken: ReadonlyMap<Source, Pick<Source, 'cursor' | 'queue'>>,
  recoveries: ReadonlyMap<string, Candidate> | undefined,
): void {
  for (const [source, was] of taken) {
    source.cursor = was.cursor;
    source.queue = was.queue;
  }
  if (recoveries) for (const [key, c] of recoveries) s.dueRecoveries.set(key, c);
}
