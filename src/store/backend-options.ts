import type { Store } from './types.js';

/**
 * What `openStore` hands a backend's `fromUrl` (its own file, so that the backends, which
 * `open.ts` loads lazily, import these types without importing `open.ts` back).
 */
export interface BackendOptions {
  prefix: string;
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
