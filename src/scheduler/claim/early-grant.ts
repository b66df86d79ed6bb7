import type { Lease } from '../../store/types.js';
import type { Candidate, Job } from '../internal-types.js';
import type { NodeState } from '../node-state.js';
import { localWaitFor } from '../run/start-at.js';

/** How far before its fire time a grant may come and still be kept (see {@link earlyGrant}). */
export const MAX_EARLY_WAIT_MS = 1_000;

/** What a claim granted before its start does (claim.ts, settleClaim). */
export interface EarlyGrant {
  /** The occurrence's start (store time): its fire time plus jitter. */
  start: number;
  /** `start − acquiredAt`: how early the grant came (≤ 0: not early). */
  ahead: number;
  /** Early by little enough to be kept. */
  wait: boolean;
  /** Claimed ahead, but something must be judged at its start: given back, claimed again then. */
  giveBack: boolean;
  /** Claimed ahead and going on now: the handler waits until this monotonic time (run.ts). */
  notBefore: number | undefined;
}

/**
 * A claim granted before its start.
 *
 * Granted a little before the fire time (this node's estimate of the store clock ran ahead by its
 * error bound): kept, and the run waits until the fire time has passed on the store clock —
 * `fireTime − acquiredAt` from now, with a margin for clock-rate drift, since the grant came at
 * the latest now. Giving it back instead costs a round trip and, when the answer came late (a
 * lost reply asked about at a later tick), would hide the fire time under a later run's
 * high-water mark. Further ahead than that (an estimate far off), or while stopping, it is given
 * back.
 *
 * Claimed ahead on purpose (due/claim-lead.ts), its gate won in this claim or none needed: goes
 * on now — its start record is written ahead, and its handler waits for the start (`notBefore`,
 * with run/start-at.ts's drift margin). One that must be judged at its start — its gate
 * refused (a run still going at the claim may have ended by the start), or asked for only after
 * the win (gateAfterWin), or an exclusion — is given back now and claimed again at its start
 * (`Source.notAhead`), not held in a wait that would hold up this node's tick.
 */
export function earlyGrant(
  s: NodeState,
  job: Job,
  c: Candidate,
  lease: Lease,
  gate: Lease | null | undefined,
): EarlyGrant {
  const start = c.scheduledAt ?? c.occ.fireTime;
  const ahead = start - lease.acquiredAt;
  const wait = ahead > 0 && ahead <= Math.min(MAX_EARLY_WAIT_MS, job.spec.lockAtMostForMs / 4);
  const goOn =
    wait &&
    c.ahead === true &&
    (c.gate ? gate !== null && gate !== undefined : true) &&
    c.excluded !== true &&
    s.stopping?.signal.aborted !== true;
  return {
    start,
    ahead,
    wait,
    giveBack: ahead > 0 && c.ahead === true && !goOn,
    notBefore: goOn ? s.clock.monotonic() + localWaitFor(ahead) : undefined,
  };
}
