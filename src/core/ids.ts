import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/** A short random id, url-safe. */
export function randomId(bytes = 9): string {
  return randomBytes(bytes).toString('base64url');
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
