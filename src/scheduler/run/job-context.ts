import type { JobSpec } from '../job-options.js';
import type { JobContext } from '../types.js';
import type { Claim } from './run-records.js';

/** Where a context's `signal` comes from: the attempt's link of halt and timeout, or halt itself. */
export interface SignalSource {
  readonly signal: AbortSignal;
}

const SOURCE = Symbol('oncely.signalSource');

/**
 * `ctx.signal`, one getter for every context. The AbortSignal is made only when a handler reads
 * it (most never do: 1,000 runs in flight would otherwise make 1,000 controllers). Written as an
 * object literal with a getter, V8 made each context a dictionary-mode object — a hash table of
 * its own per run (~0.5 KB in flight) and slow property reads in handlers; defined on the object
 * with one shared getter, contexts keep fast properties and share their hidden class.
 */
function signalOf(this: { [SOURCE]: SignalSource }): AbortSignal {
  return this[SOURCE].signal;
}

/**
 * The context an attempt's handler gets. Fields in the documented order; the optional ones only
 * when set (`'scheduleId' in ctx` is false for a job's own trigger), `signal` an enumerable own
 * property as before (a spread copies it).
 */
export function jobContext(
  claim: Claim,
  spec: JobSpec,
  attempt: number,
  node: string,
  source: SignalSource,
): JobContext {
  const { occ } = claim;
  const ctx = {
    job: occ.job,
    fireTime: new Date(occ.fireTime),
    scheduledAt: new Date(claim.scheduledAt ?? occ.fireTime),
    attempt,
    node,
    token: claim.lease.token,
  };
  Object.defineProperty(ctx, 'signal', { get: signalOf, enumerable: true, configurable: true });
  Object.defineProperty(ctx, SOURCE, { value: source });
  const out = ctx as JobContext;
  if (occ.scheduleId !== undefined) out.scheduleId = occ.scheduleId;
  if (claim.data !== undefined) out.data = claim.data;
  if (occ.shard !== undefined && spec.shards) {
    const param = spec.shards.params[occ.shard];
    out.shard =
      param === undefined
        ? { index: occ.shard, count: spec.shards.count }
        : { index: occ.shard, count: spec.shards.count, param };
  }
  return out;
}
