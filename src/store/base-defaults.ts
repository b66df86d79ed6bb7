import { invalidArgument, OncelyError } from '../core/errors.js';
import type { NormalizedWriteOp } from './validate.js';
import type { NormalizedPageOp } from './validate-page.js';

/**
 * Throws `INVALID_ARGUMENT` when the keys and values of one request (UTF-8 bytes) are over what
 * the server takes in one request (`limit`, with the setting that decides it): refused before it
 * is sent, since the server's own refusal looks like an outage (see `BaseStore.requestLimit`).
 */
export function checkRequestSize(
  kind: string,
  limit: { bytes: number; setting: string },
  operation: string,
  parts: readonly (string | undefined)[],
): void {
  let bytes = 0;
  for (const part of parts) if (part !== undefined) bytes += Buffer.byteLength(part);
  if (bytes > limit.bytes)
    throw invalidArgument(
      `${kind} store: ${operation} of ${bytes} bytes is more than the server takes in one request (${limit.bytes} bytes: ${limit.setting}); store less per value or batch`,
    );
}

/** The single-op calls {@link applyOneByOne} is built from. */
export interface SingleWrites {
  put(key: string, value: string, ttlMs: number | undefined): Promise<void>;
  delete(key: string): Promise<boolean>;
  release(key: string, token: number, holdUntil: number | undefined): Promise<boolean>;
}

/**
 * `BaseStore.doApply`'s default: the ops one by one, in order — correct results, one round trip per
 * op, **not atomic**. A compare-and-delete is refused before anything is applied: it cannot be
 * built from a get and a delete without a race (a value put between the two would be deleted).
 */
export async function applyOneByOne(
  kind: string,
  ops: readonly NormalizedWriteOp[],
  single: SingleWrites,
): Promise<boolean[]> {
  if (ops.some((op) => op.op === 'delete' && op.ifValue !== undefined)) {
    throw new OncelyError(
      'INVALID_ARGUMENT',
      `the ${kind} store cannot compare-and-delete (apply() delete with ifValue): its doApply must be overridden to do it atomically`,
    );
  }
  const results: boolean[] = [];
  for (const op of ops) {
    if (op.op === 'put') {
      await single.put(op.key, op.value, op.ttlMs);
      results.push(true);
    } else if (op.op === 'delete') {
      results.push(await single.delete(op.key));
    } else {
      results.push(await single.release(op.key, op.token, op.holdUntil));
    }
  }
  return results;
}

/** The keys and values a page claim sends (what counts towards a request's size). */
export function pageParts(ops: readonly NormalizedPageOp[]): string[] {
  return ops.flatMap((op) => (op.op === 'move' ? [op.from, op.to, op.value] : [op.key, op.value]));
}
