import type { Lease, LeaseRequest } from '../../store/types.js';
import type { Candidate } from '../internal-types.js';
import { gateOf } from '../keys.js';
import { REPLAY_MARK } from './overlap.js';

/**
 * The owner an overlap gate is asked for under. A replay of missed work says so (REPLAY_MARK, at
 * the end): an on-time fire time that finds the gate held by a replay waits behind it instead of
 * being skipped (overlap.ts). A gate asked for once the occurrence is won (a queued run, a
 * takeover: gateAfterWin) names the occurrence lease it was won under (`won`, its token): if
 * that acquire's answer is lost, the gate may be this claim's, unheard of, and the next tick
 * tells it apart from any other grant to this node by that name (unanswered.ts) and adopts it.
 * Unique per claim: tokens are unique store-wide. (Node ids are at most 200 characters: with the
 * token and the mark an owner stays within the store's 255.)
 */
export function gateOwner(node: string, c: Pick<Candidate, 'source'>, won?: Pick<Lease, 'token'>): string {
  const claim = won === undefined ? '' : ` #${won.token}`;
  return `${node}${claim}${c.source === 'misfire' ? REPLAY_MARK : ''}`;
}

/**
 * The overlap gate request of a candidate; `won`: the occurrence lease it was won under, for a
 * gate asked for once the occurrence is won (gateAfterWin), whose owner names that lease (see
 * {@link gateOwner}).
 */
export function gateRequest(node: string, c: Candidate, leaseMs: number, won?: Lease): LeaseRequest {
  return { key: gateOf(c.occ), owner: gateOwner(node, c, won), leaseMs };
}
