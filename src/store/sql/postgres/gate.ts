import type { Tables } from '../tables.js';

/**
 * The sweep gate (PostgreSQL). Keys hash into {@link GATE_BUCKETS} buckets, each an advisory lock.
 * acquire holds its keys' buckets in SHARE mode for its whole statement, from before it draws
 * tokens until it commits; sweep deletes a lease row only if it gets its bucket EXCLUSIVELY with a
 * try-lock (never waiting: a busy bucket is simply left for the next sweep).
 *
 * Why: an INSERT computes its row, token included, before it finds out whether the key exists. An
 * acquire that drew token t and then waited on another acquire's fresh row (token t' > t) would,
 * if sweep deleted that row meanwhile (tiny lease, already expired), insert t after t' — a token
 * going backwards. With the gate no row of a key can be deleted while an acquire of that key is in
 * flight, so a pre-drawn token is used only when every token written for the key since it was
 * drawn is still in the row (and then the DO UPDATE path draws a fresh one). Shared locks never
 * block each other and sweep never waits, so the gate adds no contention between acquirers and no
 * deadlock; 64 buckets bound the locks a 1000-key batch holds.
 */
export const GATE_BUCKETS = 64;

/** The advisory lock's first half: one namespace per table prefix (the prefix is a safe literal). */
export function gateSpace(t: Tables): string {
  return `hashtext('oncely-gate:${t.prefix}')`;
}

/** SQL for the bucket of a key expression. */
export function gateBucket(keyExpression: string): string {
  return `(hashtext(${keyExpression}) & ${GATE_BUCKETS - 1})`;
}
