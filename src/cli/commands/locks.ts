/**
 * `oncely locks`: leases currently held in the store (job occurrences, overlap gates, `withLock`
 * locks), ascending by key. `--json` prints a bare array of `{ key, owner, token, acquiredAt,
 * expiresAt }` with ISO-8601 times (store clock).
 */
import type { Command } from 'commander';
import { wholeNumber } from '../arg-parsers.js';
import { withInspector } from '../inspect-session.js';
import { printJson, printText } from '../output.js';
import { type StoreFlags, withStoreOptions } from '../store-option.js';
import { formatDuration, formatTable, isoOrDash } from '../table.js';

interface LocksFlags extends StoreFlags {
  json?: boolean;
  limit: number;
}

export function registerLocks(program: Command): void {
  withStoreOptions(program.command('locks').description('leases currently held (key, owner, token, times)'))
    .option('--limit <n>', 'at most this many leases', wholeNumber(1, 10_000), 100)
    .option('--json', 'print a JSON array')
    .action((flags: LocksFlags) =>
      withInspector(flags, async (_scheduler, store) => {
        const [leases, now] = await Promise.all([store.listLeases({ limit: flags.limit }), store.now()]);
        const rows = leases.map((l) => ({
          key: l.key,
          owner: l.owner,
          token: l.token,
          acquiredAt: new Date(l.acquiredAt).toISOString(),
          expiresAt: new Date(l.expiresAt).toISOString(),
        }));
        if (flags.json) {
          printJson(rows);
          return;
        }
        printText(
          leases.length === 0
            ? 'No leases held.'
            : formatTable(
                ['KEY', 'OWNER', 'TOKEN', 'ACQUIRED', 'EXPIRES'],
                leases.map((l) => [
                  l.key,
                  l.owner,
                  String(l.token),
                  isoOrDash(l.acquiredAt),
                  `${isoOrDash(l.expiresAt)} (in ${formatDuration(l.expiresAt - now)})`,
                ]),
              ),
        );
      }),
    );
}
