import { randomFillSync, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/** Bytes drawn from the system's generator at once for {@link randomId}. */
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolAt = POOL_BYTES;

/**
 * A short random id, url-safe: `bytes` random bytes in base64url. The bytes come from a pool
 * filled by the system's generator 4 KiB at a time and handed out once each: `randomBytes` per id
 * (a small Buffer of its own and a trip into OpenSSL each time) cost ~5 µs, and a bulk upsert
 * makes one per schedule (its audit entry's id; BENCHMARKS.md, bulk upsert). Ids, not secrets:
 * the dashboard's tokens and keys draw their own bytes.
 */
export function randomId(bytes = 9): string {
  if (bytes > POOL_BYTES) throw new RangeError(`randomId: at most ${POOL_BYTES} bytes; got ${bytes}`);
  if (poolAt + bytes > POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const id = pool.toString('base64url', poolAt, poolAt + bytes);
  poolAt += bytes;
  return id;
}

let processOwner: string | undefined;

/**
 * The default owner/node name: `host:pid:random`, unique per process and readable in
 * `oncely locks`. Computed once per process (it is on every `tryLock`'s path).
 */
export function defaultOwner(): string {
  processOwner ??= `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  return processOwner;
}
