import { nextFireTimes } from '../../schedule/fire-times.js';
import { startOfFire } from '../../schedule/jitter.js';
import { attempts } from '../claim/backfill-claim.js';
import type { Candidate, EntryMove } from '../internal-types.js';
import { keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import type { DueEntry } from './due-entry.js';

/**
 * A due entry that names a fire time some other path ran. A backfill run (claim/backfill-claim.ts)
 * holds the fire time's own claim, so it excludes the entry's run of it, but it moves no entry:
 * a stored schedule's entry moves on only with the run (or settle) of the fire time it names, by
 * the winner of that claim. An entry that reaches a fire time a backfill ran — a catch-up replaying
 * its way through what a pause left while a backfill of the same range went faster — was refused
 * by that run's "done" hold at every read, for the hold's hour: the schedule ran nothing more
 * (simulator, catch-up seed 23 of the pauses-and-backfills mix: +12 s to +27 s lost).
 *
 * So a refused claim of a missed fire time (a replay, or a settle of missed ones) — or one not
 * sent, a takeover found on record (claim.ts) — is looked at, at the next tick (claim/watch.ts).
 * Held by a run still going: looked at again when its lease would end. Held "done", with a backfill
 * attempt on record (the chain's own run would have moved the entry), while the entry still names
 * it: the fire time is handled, and the entry moves past it alone — to its next fire time, which
 * the next read plans afresh (run on time, replayed, or settled with the misfire policy's event
 * and a pause's span). Not counted against maxRuns (a backfill run is not); a `spanned` entry
 * stays so.
 *
 * Stale copies: a start batch retried after its first try was applied (its reply lost) puts back
 * the entry it had moved on, behind the chain. Such a copy names a fire time the chain ran: the
 * backfill test leaves it inert behind the hold, as it always was (moved, it would overwrite the
 * chain's entry with its own runs left: simulator, maxRuns under faults, seed 1). One that names a
 * fire time a backfill ran is deleted if the next fire time has an entry already (never
 * overwritten); else it moves, and stops at the first fire time the chain ran, or meets the chain.
 *
 * The move is a compare-and-move (a page claim's `move`): of racing nodes one moves it, and an
 * entry moved on meanwhile is not moved again. A store without pages gets a delete and a put
 * after the read: two nodes racing write the same. On-time claims (refused by the winner, nearly
 * always) look at nothing; a replay's losers read a lease, two entries and a history each.
 */

/** The move of entry `e` past its fire time alone, for the claims of `e` that may need it (see the file comment). */
export function movePast(s: NodeState, e: DueEntry, candidates: readonly Candidate[]): void {
  let move: EntryMove | undefined;
  for (const c of candidates) {
    if (c.source !== 'misfire' || c.pageMove !== undefined) continue;
    if (c.advance === undefined && c.settleOnly === undefined) continue;
    move ??= pastFireTime(s, e);
    c.movePast = move;
  }
}

function pastFireTime(s: NodeState, e: DueEntry): EntryMove {
  const { id, job, v } = e.schedule;
  const next = nextFireTimes(e.trigger, e.fireTime, 1)[0];
  const at = next === undefined ? next : startOfFire(e.jitter, e.trigger, job, id, next);
  const value = JSON.stringify({
    job,
    ...(e.spanned === true && { spanned: true }),
    ...(e.left !== undefined && { left: e.left }),
  });
  return next === undefined
    ? { from: e.key, to: keys.dueEnded(id, v), value, ttlMs: s.retentionMs, ended: true }
    : { from: e.key, to: keys.dueEntry(next, id, v, at), value };
}

/**
 * Moves the entry past its fire time `occ` (see the file comment), once its claim was refused and
 * found held "done". Throws when the store fails (the look is kept and made again).
 */
export async function movePastHeld(s: NodeState, move: EntryMove, occ: OccurrenceId): Promise<void> {
  const { store } = s;
  const [[from, to], onRecord] = await Promise.all([
    store.getMany([move.from, move.to]),
    attempts(store, occ),
  ]);
  // Moved on already — nearly always by the run that holds the fire time — or run by the chain
  // itself, so that this entry is a stale copy (a start batch retried after its applied first try
  // puts back the entry it had moved on): left as it is, inert behind the hold, as before.
  if ((from ?? null) === null || !onRecord.some((e) => e.source === 'backfill')) return;
  if ((to ?? null) !== null && !move.ended) {
    // The next fire time has an entry already: this one was a stale copy; the two are one again.
    await store.apply([{ op: 'delete', key: move.from, ifValue: from! }]);
  } else if (store.capabilities.pages) {
    const { ended: _, ...op } = move;
    const { lease } = await store.claimPage(
      { key: keys.entryMove(occ.job, s.newId()), owner: s.node, leaseMs: 60_000 },
      [{ op: 'move', ...op }],
    );
    if (lease) await store.release(lease.key, lease.token);
  } else {
    await store.apply([
      { op: 'delete', key: move.from },
      ...(move.ended ? [] : [{ op: 'put' as const, key: move.to, value: move.value }]),
    ]);
  }
  // Its next fire time is likely due already (a past one): read the index again.
  s.dueWakeAt = 0;
}
