import type { Lease, WriteOp } from '../../store/types.js';
import { decodeHistory, encodeHistory, occFields } from '../finish/history.js';
import { keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import type { InflightRecord } from '../run/run-records.js';
import type { HistoryEntry } from '../types.js';

/** The history entry that records a dead run's attempt as abandoned (at store time `now`). */
export function abandonedEntry(occ: OccurrenceId, rec: InflightRecord, now: number, error?: string): string {
  return encodeHistory({
    ...occFields(occ),
    node: rec.node,
    attempt: rec.attempt,
    token: rec.token,
    source: rec.source,
    status: 'abandoned',
    startedAt: new Date(rec.startedAt ?? rec.fireTime),
    finishedAt: new Date(now),
    ...(error !== undefined && { error }),
  });
}

/** The occurrence's in-flight record: a run of it started and has not ended (or died). */
export async function inflightOf(s: NodeState, occ: OccurrenceId): Promise<InflightRecord | undefined> {
  const rec = await s.store.get(keys.inflight(occ));
  return rec === null ? undefined : (JSON.parse(rec) as InflightRecord);
}

/** History statuses that close an occurrence: it ran (or was skipped) and is never run again. */
export const FINAL_STATUSES: ReadonlySet<string> = new Set(['succeeded', 'failed', 'timed-out', 'skipped']);

/**
 * Whether any attempt of the occurrence has a final history record (one scan of its history).
 * A queued run (the gate's pending record) of such an occurrence is stale: its fire time was run
 * some other way — a node that lagged claimed it on time through its own cursor, say — and that
 * run does not consume the pending record. Within the run's "done" hold the claim is refused;
 * after it (an hour or more later) only this look-up keeps the record from running it again.
 */
export async function occurrenceEnded(s: NodeState, occ: OccurrenceId): Promise<boolean> {
  return (await occurrenceHistory(s, occ)).some((e) => FINAL_STATUSES.has(e.status));
}

/** Every attempt's history entry of the occurrence (one scan; at most 100 attempts). */
export async function occurrenceHistory(s: NodeState, occ: OccurrenceId): Promise<HistoryEntry[]> {
  const records = await s.store.scan(keys.occurrenceHistoryPrefix(occ), { limit: 100 });
  return records.map((r) => decodeHistory(r.value, r.key));
}

/**
 * A queued run (the gate's pending record) of a fire time that another node also ran through its
 * own cursor — that start does not consume the pending record — and whose run died: its in-flight
 * record is still there (recovery had not taken it yet: a poll claims queued runs before its
 * recovery pass), its lease lapsed, and this claim won the occurrence. The new run is then a
 * recovery like recover.ts's: the next attempt number, and the dead attempt recorded abandoned
 * in the same batch as the new in-flight record (which replaces the dead one's, so recovery never
 * sees it twice). Before, it ran as attempt 1 again with a higher token and the dead attempt
 * stayed "running" in the history (simulator seeds 1443, 2487, 2715 of 3,000).
 *
 * `rec` is the in-flight record the poll read; undefined is returned when it is not older than
 * this claim. Called only once {@link occurrenceEnded} said no attempt of the occurrence ended, so
 * it reads nothing itself.
 */
export function deadAttempt(
  s: NodeState,
  occ: OccurrenceId,
  rec: InflightRecord,
  lease: Lease,
): { attempt: number; startWrites: WriteOp[] } | undefined {
  // Tokens only grow: a record with our token or a higher one is not of a run before this claim.
  // Its attempt did not end: the caller found no final history for the occurrence (occurrenceEnded).
  if (rec.token >= lease.token) return undefined;
  return {
    attempt: rec.attempt + 1,
    startWrites: [
      {
        op: 'put',
        key: keys.history(occ, rec.attempt),
        value: abandonedEntry(
          occ,
          rec,
          lease.acquiredAt,
          `node ${rec.node} stopped renewing its lease; its queued run was claimed by ${s.node}`,
        ),
        ttlMs: s.retentionMs,
      },
    ],
  };
}
