import type { Lease, LeaseRequest } from './types.js';

/**
 * `tryLock`'s own way into a {@link BaseStore}: one lease request that `lockSpec` has already
 * validated completely (key, owner, lease length), so the store skips validating it again and the
 * batch bookkeeping of `acquire` (repeats, order). Symbol-keyed, so it is not part of the public
 * `Store` contract; a store without it (a third-party one) is called through `acquire`.
 */
export const ACQUIRE_ONE = Symbol('oncely.acquireOne');

/**
 * A `Lock`'s way to release its own lease: key and token come from a grant, so they are valid.
 * `holdUntil` is a store time computed from the grant (a whole number of ms).
 */
export const RELEASE_GRANTED = Symbol('oncely.releaseGranted');

/** The internal calls a {@link BaseStore} answers (see {@link ACQUIRE_ONE}, {@link RELEASE_GRANTED}). */
export interface TrustedCalls {
  [ACQUIRE_ONE](request: LeaseRequest): Promise<Lease | null>;
  [RELEASE_GRANTED](key: string, token: number, holdUntil: number): Promise<boolean>;
}
