import { OncelyError } from '../../core/errors.js';
import { validatePrefix } from '../validate.js';

/** Version of the SQL schema this code writes; a store whose meta table says more refuses to run. */
export const SCHEMA_VERSION = 1;

/**
 * Every table (and sequence) name a SQL store uses. Names only ever come from the validated prefix
 * (letters, digits, `_`), so they are safe to splice into SQL text; values never are.
 */
export interface Tables {
  readonly prefix: string;
  /** `key`, owner, token, acquired_at, expires_at (ms, store clock). */
  readonly leases: string;
  /** `key`, value, expires_at (ms or NULL). */
  readonly records: string;
  /** The store-wide fencing counter (a sequence, a one-row table or an AUTO_INCREMENT table). */
  readonly fence: string;
  /** name → value; holds `schema_version`. */
  readonly meta: string;
}

export function tableNames(prefix: string): Tables {
  const p = validatePrefix(prefix);
  return { prefix: p, leases: `${p}leases`, records: `${p}records`, fence: `${p}fence`, meta: `${p}meta` };
}

/** The error for a schema written by a newer oncely. */
export function schemaTooNew(kind: string, found: number): OncelyError {
  return new OncelyError(
    'SCHEMA',
    `${kind} store: the schema has version ${found}, newer than the ${SCHEMA_VERSION} this oncely understands; upgrade oncely (or use another prefix)`,
  );
}
