/**
 * Exit codes of the `oncely` command and the mapping from a thrown error to one of them, plus the
 * one line printed for it. The codes are a contract (DESIGN.md "CLI"): scripts and external tests
 * branch on them.
 *
 * - 0 ok
 * - 1 runtime failure: the store is unreachable, a port is taken, anything unexpected
 * - 2 usage or configuration error: bad flag, bad jobs file, malformed store URL, unknown scheme
 */
import { CommanderError } from 'commander';
import { OncelyError } from '../core/errors.js';
import { scrubSecrets } from './secrets.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A problem with what the user asked for (flags, files): exit 2, message printed as is. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export function exitCodeOf(err: unknown): number {
  // Commander's own exits: 0 for --help, `help CMD` and --version; anything else is a usage error
  // (including help shown because no command was given).
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  if (err instanceof UsageError) return EXIT_USAGE;
  if (err instanceof OncelyError && err.code === 'INVALID_ARGUMENT') return EXIT_USAGE;
  return EXIT_FAILURE;
}

/**
 * The message to print for `err` (main.ts prefixes each line with `error: `), with every registered secret
 * (store password, dashboard token) redacted; `undefined` when nothing should be printed because commander
 * already wrote its own message (or help/version).
 */
export function messageOf(err: unknown): string | undefined {
  if (err instanceof CommanderError) return undefined;
  let text: string;
  if (err instanceof OncelyError) {
    text =
      err.code === 'INVALID_ARGUMENT' || err.code === 'STORE_UNAVAILABLE'
        ? err.message
        : `${err.code}: ${err.message}`;
  } else if (err instanceof Error) {
    text = err.message || err.name;
  } else {
    text = String(err);
  }
  return scrubSecrets(text);
}
