import { invalidArgument } from '../core/errors.js';
import type {
  LeaseRequest,
  ListLeasesOptions,
  PutOptions,
  ScanOptions,
  SweepOptions,
  WriteOp,
} from './types.js';

/** Longest key a store accepts, in UTF-16 code units (all SQL schemas size their key columns for it). */
export const MAX_KEY_LENGTH = 512;
export const MAX_OWNER_LENGTH = 255;
export const MAX_SCAN_LIMIT = 10_000;
/** Largest batch one `acquire` or `apply` round trip takes. */
export const MAX_BATCH = 1000;
/** Leases longer than ~100 years are refused: they overflow nothing but are surely a unit mistake. */
export const MAX_LEASE_MS = 100 * 365 * 86_400_000;

const PREFIX = /^[A-Za-z_][A-Za-z0-9_]{0,30}$/;

/** Table/key prefix used by every backend: letters, digits and `_`, starting with a letter or `_`, at most 31 characters. */
export function validatePrefix(prefix: string): string {
  if (typeof prefix !== 'string' || !PREFIX.test(prefix)) {
    throw invalidArgument(
      `prefix ${JSON.stringify(prefix)} is invalid: use 1-31 letters, digits or '_', starting with a letter or '_' (it becomes part of table and key names)`,
    );
  }
  return prefix;
}

/** Whether `text` is a valid prefix ({@link validatePrefix} would take it). */
export function isPrefix(text: string): boolean {
  return PREFIX.test(text);
}

/** A UTF-16 surrogate without its partner: not a character, and every store would mangle it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** `String.prototype.isWellFormed` (Node ≥ 20): a native scan, much cheaper than the regex on every key. */
const isWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

export function requireWellFormed(text: string, what: string): void {
  // Drivers encode text as UTF-8, turning a lone surrogate into U+FFFD: two different keys would
  // become one row, and a lease could be granted for a key the caller never sees again.
  if (isWellFormed ? !isWellFormed.call(text) : LONE_SURROGATE.test(text)) {
    throw invalidArgument(`${what} contains a lone UTF-16 surrogate; use well-formed Unicode text`);
  }
}

export function validateKey(key: string, what = 'key'): string {
  if (typeof key !== 'string' || key.length === 0)
    throw invalidArgument(`${what} must be a non-empty string`);
  requireWellFormed(key, what);
  if (key.length > MAX_KEY_LENGTH) {
    throw invalidArgument(`${what} is ${key.length} characters long; at most ${MAX_KEY_LENGTH} are allowed`);
  }
  if (key.includes('\u0000')) throw invalidArgument(`${what} must not contain NUL characters`);
  return key;
}

export function validateOwner(owner: string): string {
  if (typeof owner !== 'string' || owner.length === 0)
    throw invalidArgument('owner must be a non-empty string');
  requireWellFormed(owner, 'owner');
  if (owner.includes('\u0000')) throw invalidArgument('owner must not contain NUL characters');
  if (owner.length > MAX_OWNER_LENGTH) {
    throw invalidArgument(
      `owner is ${owner.length} characters long; at most ${MAX_OWNER_LENGTH} are allowed`,
    );
  }
  return owner;
}

export function validateLeaseMs(leaseMs: number, what = 'leaseMs'): number {
  if (!Number.isInteger(leaseMs) || leaseMs <= 0 || leaseMs > MAX_LEASE_MS) {
    throw invalidArgument(
      `${what} must be a whole number of milliseconds between 1 and ${MAX_LEASE_MS}; got ${leaseMs}`,
    );
  }
  return leaseMs;
}

export function validateToken(token: number): number {
  if (!Number.isSafeInteger(token) || token < 0)
    throw invalidArgument(`token must be a non-negative integer; got ${token}`);
  return token;
}

export function validateTime(at: number, what: string): number {
  if (!Number.isFinite(at) || at < 0)
    throw invalidArgument(`${what} must be a store time in epoch ms; got ${at}`);
  return Math.round(at);
}

export function validateRequests(requests: readonly LeaseRequest[]): void {
  if (!Array.isArray(requests)) throw invalidArgument('acquire() takes an array of { key, owner, leaseMs }');
  if (requests.length > MAX_BATCH) {
    throw invalidArgument(`acquire() takes at most ${MAX_BATCH} requests per batch; got ${requests.length}`);
  }
  for (const r of requests) {
    validateKey(r.key);
    validateOwner(r.owner);
    validateLeaseMs(r.leaseMs);
  }
}

/** A validated {@link WriteOp}: times rounded, absent options `undefined`, no other fields. */
export type NormalizedWriteOp =
  | {
      /** Which write. */
      op: 'put';
      /** The record's key. */
      key: string;
      /** Its new value. */
      value: string;
      /** Time to live in whole ms; `undefined`: never expires. */
      ttlMs: number | undefined;
    }
  | {
      /** Which write. */
      op: 'delete';
      /** The record's key. */
      key: string;
      /** Delete only if the live record holds exactly this value; `undefined`: unconditionally. */
      ifValue: string | undefined;
    }
  | {
      /** Which write. */
      op: 'release';
      /** The leased key. */
      key: string;
      /** The fencing token the release acts for. */
      token: number;
      /** Whole store time in ms until which the key stays unavailable; `undefined`: free at once. */
      holdUntil: number | undefined;
    };

/**
 * Validates an `apply` batch op by op with the single-op validators (so a batch refuses exactly
 * what the single calls would) and returns normalised copies; throws before anything is applied.
 */
export function normalizeWriteOps(ops: readonly WriteOp[]): NormalizedWriteOp[] {
  if (!Array.isArray(ops)) throw invalidArgument('apply() takes an array of { op, key, … }');
  if (ops.length > MAX_BATCH) {
    throw invalidArgument(`apply() takes at most ${MAX_BATCH} ops per batch; got ${ops.length}`);
  }
  return ops.map((op: WriteOp, i): NormalizedWriteOp => {
    try {
      return normalizeWriteOp(op);
    } catch (err) {
      throw invalidArgument(`apply() op ${i}: ${(err as Error).message}`);
    }
  });
}

function normalizeWriteOp(op: WriteOp): NormalizedWriteOp {
  if (typeof op !== 'object' || op === null) throw invalidArgument('not an object');
  switch (op.op) {
    case 'put':
      return {
        op: 'put',
        key: validateKey(op.key),
        value: validateValue(op.value),
        ttlMs: normalizePut(op.ttlMs === undefined ? {} : { ttlMs: op.ttlMs }),
      };
    case 'delete':
      return {
        op: 'delete',
        key: validateKey(op.key),
        // A value no record can hold (NUL, a lone surrogate) could never match: refused like put's.
        ifValue: op.ifValue === undefined ? undefined : validateValue(op.ifValue, 'ifValue'),
      };
    case 'release':
      return {
        op: 'release',
        key: validateKey(op.key),
        token: validateToken(op.token),
        holdUntil: op.holdUntil === undefined ? undefined : validateTime(op.holdUntil, 'holdUntil'),
      };
    default:
      throw invalidArgument(
        `op is ${describe((op as { op?: unknown }).op)}; use 'put', 'delete' or 'release'`,
      );
  }
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function validateLimit(limit: number | undefined, fallback: number): number {
  if (limit === undefined) return fallback;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SCAN_LIMIT) {
    throw invalidArgument(`limit must be a whole number from 1 to ${MAX_SCAN_LIMIT}; got ${limit}`);
  }
  return limit;
}

export interface NormalizedScan {
  prefix: string;
  limit: number;
  reverse: boolean;
  after: string | undefined;
}

/**
 * Validates a `getMany` batch key by key with {@link validateKey} (so it refuses exactly what `get`
 * would) and returns its distinct keys in first-seen order; throws before anything is read.
 */
export function distinctKeys(keys: readonly string[]): string[] {
  if (!Array.isArray(keys)) throw invalidArgument('getMany() takes an array of keys');
  if (keys.length > MAX_BATCH) {
    throw invalidArgument(`getMany() takes at most ${MAX_BATCH} keys per batch; got ${keys.length}`);
  }
  keys.forEach((key: string, i) => {
    try {
      validateKey(key);
    } catch (err) {
      throw invalidArgument(`getMany() key ${i}: ${(err as Error).message}`);
    }
  });
  return [...new Set(keys)];
}

/**
 * A `count` prefix: a string without NUL, as for `scan`, and well-formed, as every key is (a lone
 * surrogate would reach a UTF-8 driver as U+FFFD and count other keys than the memory store).
 */
export function validateCountPrefix(prefix: string): string {
  if (typeof prefix !== 'string')
    throw invalidArgument('count() prefix must be a string (use "" for all keys)');
  requireWellFormed(prefix, 'count() prefix');
  if (prefix.includes('\u0000'))
    throw invalidArgument('count() prefix must not contain NUL characters (no key can hold one)');
  return prefix;
}

export function normalizeScan(prefix: string, options: ScanOptions = {}): NormalizedScan {
  if (typeof prefix !== 'string')
    throw invalidArgument('scan() prefix must be a string (use "" for all keys)');
  if (options.after !== undefined && typeof options.after !== 'string') {
    throw invalidArgument('scan() after must be a key string');
  }
  // No key holds a NUL (validateKey), so a prefix or cursor with one is a caller's mistake, and
  // PostgreSQL text could not even carry it to the server.
  if (prefix.includes('\u0000') || options.after?.includes('\u0000'))
    throw invalidArgument('scan() prefix and after must not contain NUL characters (no key can hold one)');
  return {
    prefix,
    limit: validateLimit(options.limit, 100),
    reverse: options.reverse === true,
    after: options.after,
  };
}

export function normalizeListLeases(options: ListLeasesOptions = {}): { prefix: string; limit: number } {
  const prefix = options.prefix ?? '';
  if (typeof prefix !== 'string') throw invalidArgument('listLeases() prefix must be a string');
  if (prefix.includes('\u0000'))
    throw invalidArgument('listLeases() prefix must not contain NUL characters (no key can hold one)');
  return { prefix, limit: validateLimit(options.limit, 100) };
}

export function normalizeSweep(options: SweepOptions = {}): number {
  return validateLimit(options.limit, 1000);
}

export function normalizePut(options: PutOptions = {}): number | undefined {
  if (options.ttlMs === undefined) return undefined;
  return validateLeaseMs(options.ttlMs, 'ttlMs');
}

/**
 * Record values are well-formed Unicode text without NUL (U+0000), on every backend: PostgreSQL
 * `text` cannot hold a NUL, and a value one store takes every store must take (the contract is the
 * same for keys). JSON.stringify writes a NUL as the six characters `\u0000`.
 */
export function validateValue(value: string, what = 'record value'): string {
  if (typeof value !== 'string')
    throw invalidArgument(
      `${what} must be a string (record values are strings: JSON.stringify objects first)`,
    );
  requireWellFormed(value, what);
  if (value.includes('\u0000')) {
    throw invalidArgument(
      `${what} contains a NUL character (U+0000), which stores refuse (PostgreSQL text cannot hold it); remove it or encode the value (JSON.stringify writes it as \\u0000)`,
    );
  }
  return value;
}

/**
 * The smallest string greater than every string that starts with `prefix`, in code point order
 * (= UTF-8 byte order, = PostgreSQL "C", MySQL utf8mb4_bin, SQLite BINARY, Redis lex order), or
 * `undefined` when there is none (empty prefix). `key >= prefix AND key < upper` is a prefix scan
 * that every index can serve.
 */
export function prefixUpperBound(prefix: string): string | undefined {
  const points = Array.from(prefix);
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      // Skip the surrogate range: it has no characters of its own in UTF-8.
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return points.join('') + String.fromCodePoint(next);
    }
  }
  return undefined;
}

/**
 * Compares well-formed strings in code point order, which is UTF-8 byte order (the order of the
 * stores' binary collations). JS `<` compares UTF-16 units, which agrees except where a surrogate
 * (half of a code point above U+FFFF) meets a unit from U+E000 to U+FFFF: the surrogate's code
 * point is the greater one. Allocates nothing (sorting a 1,000-op batch calls this ~10,000 times).
 */
export function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys && (x >= 0xe000 || y >= 0xe000)) return xs ? 1 : -1;
    return x < y ? -1 : 1;
  }
  // One is a prefix of the other (in UTF-16 units, so in UTF-8 bytes too): the shorter first.
  return a.length < b.length ? -1 : 1;
}

/** A UTF-16 unit at or above U+D800: where `<` and {@link compareKeys} may disagree. */
const ABOVE_D800 = /[\uD800-\uFFFF]/;

/**
 * `compareKeys`, or JS `<` when it gives the same answer for every pair of the items' keys: no key
 * holds a unit at or above U+D800 (`<` and code point order differ only where a surrogate meets a
 * unit from U+E000 up). The native comparison is several times faster on keys that share a long
 * prefix (`ctl|run|<job>|…`), as a batch's keys do; one regex test per key decides.
 */
export function keyComparator(items: Iterable<{ readonly key: string }>): (a: string, b: string) => number {
  for (const x of items) if (ABOVE_D800.test(x.key)) return compareKeys;
  return nativeCompare;
}

function nativeCompare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Sorts `items` in place by their keys in code point order (see {@link keyComparator}); returns `items`. */
export function sortByKey<T extends { readonly key: string }>(items: T[]): T[] {
  const cmp = keyComparator(items);
  return items.sort((a, b) => cmp(a.key, b.key));
}
