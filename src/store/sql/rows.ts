import { OncelyError } from '../../core/errors.js';
import type { Lease, StoredRecord } from '../types.js';
import type { Row } from './dialect.js';

/** A BIGINT column as a JS number: drivers return numbers, strings (pg) or bigints (opt-in). */
export function toInt(value: unknown): number {
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isSafeInteger(n)) {
    throw new OncelyError('INTERNAL', `expected a whole number from the database, got ${String(value)}`);
  }
  return n;
}

/** A key column as a string: MySQL returns VARBINARY columns as UTF-8 buffers. */
export function toText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  throw new OncelyError('INTERNAL', `expected a string from the database, got ${typeof value}`);
}

/** A `leases` row (key, owner, token, acquired_at, expires_at). */
export function toLease(row: Row): Lease {
  return {
    key: toText(row['key']),
    owner: toText(row['owner']),
    token: toInt(row['token']),
    acquiredAt: toInt(row['acquired_at']),
    expiresAt: toInt(row['expires_at']),
  };
}

/** A `records` row (key, value, expires_at). */
export function toRecord(row: Row): StoredRecord {
  const expires = row['expires_at'];
  return {
    key: toText(row['key']),
    value: toText(row['value']),
    expiresAt: expires === null || expires === undefined ? null : toInt(expires),
  };
}
