/**
 * `--store URL` / `--prefix P`: which store a command talks to. The URL comes from `--store`, else
 * `$ONCELY_STORE` (ignored when empty), else `sqlite:./oncely.db` (relative to the working
 * directory). The URL's password is registered as a secret before anything can print it (also for
 * a URL from `--store`, which main.ts did not see in the environment): messages show the URL only
 * through `redactUrl`, and `oncely run` redacts it from command output.
 */
import type { Command } from 'commander';
import { OncelyError } from '../core/errors.js';
import { redactUrl } from '../core/redact.js';
import { openExistingStore, openStore } from '../store/open.js';
import type { SchemaState } from '../store/schema-state.js';
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
  /** With `existing`: what the store found of its schema (undefined: it was migrated instead). */
  schema?: SchemaState | undefined;
}

export function storeUrlOf(flags: StoreFlags): string {
  const fromEnv = process.env.ONCELY_STORE;
  return flags.store ?? (fromEnv !== undefined && fromEnv !== '' ? fromEnv : DEFAULT_STORE_URL);
}

/**
 * Opens (and migrates) the store; with `existing`, a server store is not migrated but looks for its
 * schema instead, creating nothing (the read-only commands: see store-presence.ts). Throws
 * `INVALID_ARGUMENT` for a malformed URL, an unknown scheme or a bad prefix (exit 2),
 * `STORE_UNAVAILABLE` when it cannot be reached (exit 1).
 */
export async function openCliStore(
  flags: StoreFlags,
  { existing = false }: { existing?: boolean } = {},
): Promise<OpenedStore> {
  const url = storeUrlOf(flags);
  registerStoreUrl(url);
  const shown = redactUrl(url);
  const options = {
    ...(flags.prefix !== undefined && { prefix: flags.prefix }),
    connectTimeoutMs: 10_000,
  };
  try {
    if (existing) return { ...(await openExistingStore(url, options)), shown };
    return { store: await openStore(url, options), shown };
  } catch (err) {
    throw connectError(err, shown);
  }
}

/**
 * A store that could not be reached as the user should read it: `cannot connect to <URL>:
 * <reason>`, the reason without the library's layers ("postgres store: migrate failed: …" is how
 * the connection attempt is made, not what went wrong). Other errors pass unchanged.
 *
 * @example
 * // error: cannot connect to postgres://app:***@db:5432/app: connect ECONNREFUSED 10.0.0.5:5432
 */
export function connectError(err: unknown, shown: string): unknown {
  if (!(err instanceof OncelyError) || err.code !== 'STORE_UNAVAILABLE') return err;
  let reason = err.message;
  const prefix = `cannot open store ${shown}: `;
  if (reason.startsWith(prefix)) reason = reason.slice(prefix.length);
  reason = reason.replace(/^[\w-]+ store: (?:[\w ]+? failed: |cannot open "[^"]*": )?/, '');
  const late = /^store .* did not answer within (\d+) ms$/.exec(reason);
  if (late) reason = `no answer within ${Number(late[1]) / 1000} s`;
  // A file is opened, a server connected to.
  const what = /^sqlite:/i.test(shown) ? 'cannot open' : 'cannot connect to';
  return new OncelyError('STORE_UNAVAILABLE', `${what} ${shown}: ${reason}`, { cause: err });
}
