import { linkSignals } from '../../core/signals.js';
import { safetyMargin } from '../../lock/keep-alive.js';
import type { Lease, WriteOp } from '../../store/types.js';
import { encodeHistory, occFields } from '../finish/history.js';
import { keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import type { PageItem } from './page-record.js';

/**
 * Stores `ops` (a page's start), retried with back-off (100 ms doubling to 2 s) while the page's
 * lease surely holds — until a safety margin before its local deadline (measured from before the
 * grant was asked for). `false`: not stored in time; the page is left to recovery.
 */
export async function storeWhileHeld(
  state: NodeState,
  ops: WriteOp[],
  lease: Lease,
  sentAt: number,
): Promise<boolean> {
  const length = lease.expiresAt - lease.acquiredAt;
  const deadline = sentAt + length - safetyMargin(length);
  for (let failures = 0; ; failures++) {
    try {
      await state.writes.submit(ops);
      return true;
    } catch (err) {
      if (failures % 10 === 0) state.emit('error', { error: err, during: 'start of a page' });
    }
    const left = deadline - state.clock.monotonic();
    if (left <= 0 || state.abandon.signal.aborted) return false;
    const wake = linkSignals([state.abandon.signal, state.storeBack.signal]);
    await state.clock.sleep(Math.min(left, 2_000, 100 * 2 ** Math.min(failures, 5)), wake.signal);
    wake.dispose();
  }
}

/**
 * The history entry of a page's `skip` item: excluded, or skipped for overlap with the run it
 * names; or, `reason` given (`removed`), of a `run` item of a page that never started whose
 * schedule is gone.
 */
export function skippedEntry(
  state: NodeState,
  occ: OccurrenceId,
  item: PageItem,
  token: number,
  at: number,
  reason?: 'removed',
): WriteOp {
  const when = new Date(at);
  const by = item.by;
  return {
    op: 'put',
    key: keys.history(occ, 1),
    value: encodeHistory({
      ...occFields(occ),
      node: state.node,
      attempt: 1,
      token,
      source: item.source,
      status: 'skipped',
      startedAt: when,
      finishedAt: when,
      ...(reason === 'removed'
        ? { reason }
        : item.reason === 'excluded' || by === undefined
          ? { reason: 'excluded' as const }
          : {
              reason: 'overlap' as const,
              by: {
                fireTime: new Date(by.fireTime),
                ...(by.node !== undefined && { node: by.node }),
                ...(by.token !== undefined && { token: by.token }),
              },
            }),
    }),
    ttlMs: state.retentionMs,
  };
}
