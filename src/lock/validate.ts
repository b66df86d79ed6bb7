import { durationMs, parseDuration, parsePositiveDuration } from '../core/duration.js';
import { invalidArgument } from '../core/errors.js';
import { defaultOwner } from '../core/ids.js';
import { MAX_LEASE_MS, requireWellFormed, validateLeaseMs, validateOwner } from '../store/validate.js';
import type { TryLockOptions } from './types.js';

/** Longest lock name, in characters (UTF-16 code units). */
export const MAX_LOCK_NAME_LENGTH = 255;
/** Locks live in the store's lease space under this prefix (`oncely locks` lists them). */
export const LOCK_KEY_PREFIX = 'lock:';

export interface LockSpec {
  name: string;
  key: string;
  owner: string;
  atMostMs: number;
  atLeastMs: number;
}

const KNOWN = new Set(['name', 'lockAtMostFor', 'lockAtLeastFor', 'owner', 'keepAlive']);

export function validateLockName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0)
    throw invalidArgument('lock name must be a non-empty string');
  if (name.length > MAX_LOCK_NAME_LENGTH) {
    throw invalidArgument(
      `lock name is ${name.length} characters long; at most ${MAX_LOCK_NAME_LENGTH} are allowed`,
    );
  }
  if (name.includes('\u0000')) throw invalidArgument('lock name must not contain NUL characters');
  requireWellFormed(name, 'lock name');
  return name;
}

/** How errors name a lock option. */
function what(name: string, field: string): string {
  return `lock ${JSON.stringify(name)}: ${field}`;
}

/** The process's default owner, validated once (it never changes). */
let checkedDefaultOwner: string | undefined;

/**
 * Validates lock options once, up front; every error names the field and what is allowed.
 *
 * The result is complete input for the store: the key (`lock:` + a valid name: at most 260
 * characters, well-formed, no NUL) passes `validateKey`, the owner `validateOwner` and `atMostMs`
 * `validateLeaseMs`, so `tryLock` hands it to the store without validating it again. The common
 * case builds no error text: messages are made only on the way to throwing.
 */
export function lockSpec(options: TryLockOptions): LockSpec {
  if (options === null || typeof options !== 'object') {
    throw invalidArgument('lock options must be an object { name, lockAtMostFor, lockAtLeastFor?, owner? }');
  }
  for (const field of Object.keys(options)) {
    if (!KNOWN.has(field)) {
      throw invalidArgument(`unknown lock option ${JSON.stringify(field)}; known: ${[...KNOWN].join(', ')}`);
    }
  }
  const name = validateLockName(options.name);
  const { lockAtMostFor, lockAtLeastFor } = options;
  if (lockAtMostFor === undefined) throw invalidArgument(`${what(name, 'lockAtMostFor')} is required`);
  let atMostMs = durationMs(lockAtMostFor);
  if (atMostMs === undefined || atMostMs <= 0) {
    atMostMs = parsePositiveDuration(lockAtMostFor, what(name, 'lockAtMostFor'));
  }
  if (!Number.isInteger(atMostMs) || atMostMs > MAX_LEASE_MS)
    validateLeaseMs(atMostMs, what(name, 'lockAtMostFor'));
  let atLeastMs = 0;
  if (lockAtLeastFor !== undefined) {
    atLeastMs = durationMs(lockAtLeastFor) ?? parseDuration(lockAtLeastFor, what(name, 'lockAtLeastFor'));
  }
  if (atLeastMs > atMostMs) {
    throw invalidArgument(
      `${what(name, 'lockAtLeastFor')} (${atLeastMs} ms) must not exceed lockAtMostFor (${atMostMs} ms)`,
    );
  }
  let owner: string;
  if (options.owner === undefined) {
    checkedDefaultOwner ??= validateOwner(defaultOwner());
    owner = checkedDefaultOwner;
  } else {
    owner = validateOwner(options.owner);
  }
  return { name, key: LOCK_KEY_PREFIX + name, owner, atMostMs, atLeastMs };
}
