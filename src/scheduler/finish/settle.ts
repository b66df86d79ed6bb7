import { linkSignals } from '../../core/signals.js';
import type { Lease, WriteOp } from '../../store/types.js';
import type { NodeState } from '../node-state.js';

/**
 * Writes the batch that settles a claim this node holds without running it: gives back an
 * occurrence or an overlap gate, or records a skipped or queued occurrence. The first try is
 * awaited. If it fails (a store blip), it is retried in the background with back-off (100 ms
 * doubling to 2 s, at once when the store answers again) until it is stored or the lease has
 * ended on its own — so a failed write never leaves a claim or a gate held, and the job blocked,
 * until its lease ends, and the occurrence becomes claimable again as soon as the store allows.
 * The retry counts as a run of this node (a slot; stop() waits for it).
 *
 * A failed try may have been applied (its answer lost): the batch is not written again then. Its
 * ops are not all safe twice — a due entry's move (delete, put) applied again after another node
 * moved the entry on puts the old entry back, and a pending record consumed since is written
 * again (simulator, seed 185 of test/simulate-lost-replies-queue.test.ts: a queued run's batch,
 * retried 1.1 s after its lost answer, brought back stored/a's entry at +10 s beside the live one
 * at +11 s, and a node that read it settled +10 s and +11 s as missed). A batch that releases
 * this lease (every settle does) shows whether it landed: before a retry the lease is inspected,
 * and only while it is still this token's, unchanged (`expiresAt` as granted), is the batch
 * written again; free, another's, or this token's with a "done" hold, it landed.
 *
 * `stored` runs once the batch is stored; `lapsed` runs if the lease ended before it could be (the
 * claim was this node's, every other node was refused it, and nothing of its outcome is on
 * record: the caller decides what becomes of it).
 */
export async function settle(
  state: NodeState,
  what: string,
  ops: WriteOp[],
  lease: Lease,
  sentAt: number,
  stored?: () => void,
  lapsed?: () => void,
): Promise<void> {
  try {
    await state.writes.submit(ops);
    stored?.();
    return;
  } catch (err) {
    state.emit('error', { error: err, during: what });
  }
  // The lease ends by itself at acquiredAt + its length on the store clock; locally, no later
  // than that long after the acquire was sent.
  const endsAt = sentAt + (lease.expiresAt - lease.acquiredAt);
  const releases = ops.some((op) => op.op === 'release' && op.key === lease.key && op.token === lease.token);
  const retry = (async () => {
    for (let failures = 1; state.clock.monotonic() < endsAt; failures++) {
      const wake = linkSignals([state.abandon.signal, state.storeBack.signal]);
      const delay = Math.min(2_000, 100 * 2 ** Math.min(failures - 1, 5), endsAt - state.clock.monotonic());
      await state.clock.sleep(Math.max(0, delay), wake.signal);
      wake.dispose();
      if (state.abandon.signal.aborted) return;
      try {
        if (releases && (await landed(state, lease))) {
          stored?.();
          return;
        }
        await state.writes.submit(ops);
        stored?.();
        return;
      } catch (err) {
        if (failures % 10 === 0) state.emit('error', { error: err, during: what });
      }
    }
    if (!state.abandon.signal.aborted) lapsed?.();
  })();
  state.running.add(retry);
  void retry.finally(() => state.running.delete(retry));
}

/**
 * Whether a batch that releases `lease` was applied: the lease is no longer held as granted.
 * Retried only while the lease cannot have ended on its own, so a free or changed lease is the
 * batch's release (or a later claim after it). Every store answers `inspect` with the token and
 * `expiresAt` its acquire granted (testing/conformance-leases.ts), so an unchanged lease is one
 * the batch did not release.
 */
async function landed(state: NodeState, lease: Lease): Promise<boolean> {
  const now = await state.store.inspect(lease.key);
  return now === null || now.token !== lease.token || now.expiresAt !== lease.expiresAt;
}
