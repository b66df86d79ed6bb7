import type { Clock } from '../../core/clock.js';
import { occFields } from '../finish/history.js';
import type { HistoryEntry, RunSource } from '../types.js';
import type { Claim, InflightRecord } from './run-records.js';

/** Store-time estimate: the lease's grant time plus local monotonic time elapsed since its request. */
export function storeTimeNow(claim: Claim, clock: Clock): number {
  return claim.lease.acquiredAt + Math.max(0, clock.monotonic() - claim.sentAt);
}

/**
 * The fields every event and history entry of a run starts with, in one order: the occurrence
 * (occFields), then the claim's token and the node. `fireTime` reuses a Date already made.
 */
export function runFields(
  claim: Claim,
  node: string,
  fireTime?: Date,
): Pick<HistoryEntry, 'job' | 'fireTime' | 'scheduleId' | 'shard' | 'token' | 'node'> {
  const out = occFields(claim.occ, fireTime) as Pick<
    HistoryEntry,
    'job' | 'fireTime' | 'scheduleId' | 'shard' | 'token' | 'node'
  >;
  out.token = claim.lease.token;
  out.node = node;
  return out;
}

/** The in-flight record of a run's attempt, as stored. */
export function inflightText(
  claim: Claim,
  attempt: number,
  source: RunSource,
  startedAt: number,
  node: string,
  leaseMs: number,
): string {
  const inflight: InflightRecord = {
    job: claim.occ.job,
    fireTime: claim.occ.fireTime,
    attempt,
    token: claim.lease.token,
    node,
    source,
    startedAt,
    claimedAt: claim.lease.acquiredAt,
    leaseMs,
  };
  if (claim.occ.scheduleId !== undefined) inflight.scheduleId = claim.occ.scheduleId;
  if (claim.occ.shard !== undefined) inflight.shard = claim.occ.shard;
  if (claim.data !== undefined) inflight.data = claim.data;
  if (claim.runningSince !== undefined) inflight.runningSince = claim.runningSince;
  if (claim.scheduledAt !== undefined && claim.scheduledAt !== claim.occ.fireTime)
    inflight.scheduledAt = claim.scheduledAt;
  return JSON.stringify(inflight);
}

/** An error as stored in history: at most ~4,000 characters, keeping its start and its end (a failing command's last lines matter most). */
export function errorText(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.length > 4000 ? `${text.slice(0, 1000)}\n…\n${text.slice(-2990)}` : text;
}

/**
 * How long the `n`-th retry (0 = the first) waits after its failed attempt: `retryDelay × 2^n`,
 * plus a jitter of up to half of that so nodes that failed together do not retry in lockstep.
 * The jitter only adds: `retryDelay` is a minimum.
 */
export function retryWait(retryDelayMs: number, n: number, random: () => number): number {
  return retryDelayMs * 2 ** n * (1 + random() / 2);
}
