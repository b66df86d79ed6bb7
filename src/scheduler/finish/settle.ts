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
 * The retry counts as a run of this node (a slot; stop() waits for it). Every op must be safe to
 * apply twice (puts, deletes, releases by token). `stored` runs once the batch is stored;
 * `lapsed` runs if the lease ended before it could be (the claim was this node's, every other node
 * was refused it, and nothing of its outcome is on record: the caller decides what becomes of it).
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
  const retry = (async () => {
    for (let failures = 1; state.clock.monotonic() < endsAt; failures++) {
      const wake = linkSignals([state.abandon.signal, state.storeBack.signal]);
      const delay = Math.min(2_000, 100 * 2 ** Math.min(failures - 1, 5), endsAt - state.clock.monotonic());
      await state.clock.sleep(Math.max(0, delay), wake.signal);
      wake.dispose();
      if (state.abandon.signal.aborted) return;
      try {
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
