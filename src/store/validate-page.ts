import { invalidArgument } from '../core/errors.js';
import type { LeaseRequest, PageOp } from './types.js';
import { MAX_BATCH, normalizePut, validateKey, validateRequests, validateValue } from './validate.js';

/** A validated {@link PageOp}: ttl rounded (`undefined` = never expires), no other fields. */
export type NormalizedPageOp =
  | {
      /** Which write. */
      op: 'put';
      /** The record's key. */
      key: string;
      /** Its new value. */
      value: string;
      /** Time to live in ms, or `undefined`: never expires. */
      ttlMs: number | undefined;
    }
  | {
      /** Which write. */
      op: 'create';
      /** The record's key. */
      key: string;
      /** Its value, if it is created. */
      value: string;
      /** Time to live in ms, or `undefined`: never expires. */
      ttlMs: number | undefined;
    }
  | {
      /** Which write. */
      op: 'move';
      /** The record to move (it must be live). */
      from: string;
      /** Where it goes. */
      to: string;
      /** The moved record's new value. */
      value: string;
      /** Time to live in ms, or `undefined`: never expires. */
      ttlMs: number | undefined;
    };

/**
 * Validates a `claimPage` call with the single-op validators (so it refuses what `acquire` and
 * `put` would) and returns normalised copies of its ops; throws before anything is sent. Every key
 * — a put's or create's `key`, a move's `from` and `to` — may appear once in a batch: each row is
 * then written at most once, which lets a backend apply the batch as one statement whose parts
 * commute.
 */
export function normalizePageClaim(lease: LeaseRequest, ops: readonly PageOp[]): NormalizedPageOp[] {
  if (typeof lease !== 'object' || lease === null)
    throw invalidArgument('claimPage() takes a lease request { key, owner, leaseMs } first');
  validateRequests([lease]);
  if (!Array.isArray(ops)) throw invalidArgument('claimPage() takes an array of { op, … } as its ops');
  if (ops.length > MAX_BATCH)
    throw invalidArgument(`claimPage() takes at most ${MAX_BATCH} ops per page; got ${ops.length}`);
  const seen = new Set<string>();
  const once = (key: string, i: number) => {
    if (seen.has(key))
      throw invalidArgument(
        `claimPage() op ${i}: key ${JSON.stringify(key.slice(0, 80))} appears twice in the page; each key at most once`,
      );
    seen.add(key);
  };
  return ops.map((op, i): NormalizedPageOp => {
    let out: NormalizedPageOp;
    try {
      out = normalizePageOp(op);
    } catch (err) {
      throw invalidArgument(`claimPage() op ${i}: ${(err as Error).message}`);
    }
    if (out.op === 'move') {
      once(out.from, i);
      once(out.to, i);
    } else once(out.key, i);
    return out;
  });
}

function normalizePageOp(op: PageOp): NormalizedPageOp {
  if (typeof op !== 'object' || op === null) throw invalidArgument('not an object');
  const ttlMs = normalizePut(op.ttlMs === undefined ? {} : { ttlMs: op.ttlMs });
  switch (op.op) {
    case 'put':
      return { op: 'put', key: validateKey(op.key), value: validateValue(op.value), ttlMs };
    case 'create':
      return { op: 'create', key: validateKey(op.key), value: validateValue(op.value), ttlMs };
    case 'move':
      return {
        op: 'move',
        from: validateKey(op.from, 'from'),
        to: validateKey(op.to, 'to'),
        value: validateValue(op.value),
        ttlMs,
      };
    default:
      throw invalidArgument(
        `op is ${JSON.stringify((op as { op?: unknown }).op)}; use 'put', 'create' or 'move'`,
      );
  }
}
