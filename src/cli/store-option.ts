/**
 * `--store URL` / `--prefix P`: which store a command talks to. The URL comes from `--store`, else
 * `$ONCELY_STORE` (ignored when empty), else `sqlite:./oncely.db` (relative to the working
 * directory). The URL's password is registered as a secret before anything can print it (also for
 * a URL from `--store`, which main.ts did not see in the environment): messages show the URL only
 * through `redactUrl`, and `oncely run` redacts it from command output.
 */
import type { Command } from 'commander';
import { redactUrl } from '../core/redact.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import { registerStoreUrl } from './secrets.js';

export const DEFAULT_STORE_URL = 'sqlite:./oncely.db';

export interface StoreFlags {
  store?: string;
  prefix?: string;
}

/** Adds `--store` and `--prefix` to a command. */
export function withStoreOptions(command: Command): Command {
  return command
    .option('--store <url>', `store URL (default: $ONCELY_STORE, else ${DEFAULT_STORE_URL})`)
    .option('--prefix <prefix>', 'table/key prefix inside the store (default: oncely_)');
}

export interface OpenedStore {
  store: Store;
  /** The URL as it may be shown (password replaced by ***). */
  shown: string;
}

export function storeUrlOf(flags: StoreFlags): string {
  const fromEnv = process.env.ONCELY_STORE;
  return flags.store ?? (fromEnv !== undefined && fromEnv !== '' ? fromEnv : DEFAULT_STORE_URL);
}

/**
 * Opens (and migrates) the store. Throws `INVALID_ARGUMENT` for a malformed URL, an unknown scheme
 * or a bad prefix (exit 2), `STORE_UNAVAILABLE` when it cannot be reached (exit 1).
 */
export async function openCliStore(flags: StoreFlags): Promise<OpenedStore> {
  const url = storeUrlOf(flags);
  registerStoreUrl(url);
  const store = await openStore(url, {
    ...(flags.prefix !== undefined && { prefix: flags.prefix }),
    connectTimeoutMs: 10_000,
  });
  return { store, shown: redactUrl(url) };
}
