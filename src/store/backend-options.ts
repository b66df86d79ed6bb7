import type { Store } from './types.js';

/**
 * What `openStore` hands a backend's `fromUrl` (its own file, so that the backends, which
 * `open.ts` loads lazily, import these types without importing `open.ts` back).
 */
export interface BackendOptions {
  /** Prefix of every table/key the store creates (validated; `openStore`'s default `oncely_`). */
  prefix: string;
  /** How long to wait for the server before `STORE_UNAVAILABLE`, in ms. */
  connectTimeoutMs: number;
  /** SQLite only (`openStore` refuses it for any other scheme). */
  busyTimeoutMs?: number;
  /** PostgreSQL only (`openStore` refuses it for any other scheme). */
  preparedStatements?: boolean;
  /** PostgreSQL and MySQL/MariaDB only (`openStore` refuses it for any other scheme). */
  shedlockTable?: string;
}
/** What each backend module exports for `openStore`. */
export type FromUrl = (url: string, options: BackendOptions) => Promise<Store> | Store;
