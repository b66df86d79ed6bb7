import { parseDuration, parsePositiveDuration } from '../core/duration.js';
import { invalidArgument } from '../core/errors.js';
import { defaultOwner } from '../core/ids.js';
import { requireWellFormed, validateOwner } from '../store/validate.js';
import type { TryLockOptions } from './types.js';

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

/** Validates lock options once, up front; every error names the field and what is allowed. */
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
  if (options.lockAtMostFor === undefined)
    throw invalidArgument(`lock ${JSON.stringify(name)}: lockAtMostFor is required`);
  const atMostMs = parsePositiveDuration(
    options.lockAtMostFor,
    `lock ${JSON.stringify(name)}: lockAtMostFor`,
  );
  const atLeastMs =
    options.lockAtLeastFor === undefined
      ? 0
      : parseDuration(options.lockAtLeastFor, `lock ${JSON.stringify(name)}: lockAtLeastFor`);
  if (atLeastMs > atMostMs) {
    throw invalidArgument(
      `lock ${JSON.stringify(name)}: lockAtLeastFor (${atLeastMs} ms) must not exceed lockAtMostFor (${atMostMs} ms)`,
    );
  }
  const owner = options.owner === undefined ? defaultOwner() : validateOwner(options.owner);
  return { name, key: LOCK_KEY_PREFIX + name, owner, atMostMs, atLeastMs };
}
