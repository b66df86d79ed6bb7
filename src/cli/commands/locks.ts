/**
 * `oncely locks`: leases currently held in the store (job occurrences, overlap gates, `withLock`
 * locks), ascending by key. A finished occurrence's claim stays held for a while as a "done" hold
 * (so that a late node never runs that fire time again): those are not held by any running work,
 * so they are left out and counted unless `--all` is given. `--json` prints a bare array of
 * `{ key, owner, token, acquiredAt, expiresAt, kind, name?, state? }` with ISO-8601 times (store
 * clock); `kind` is `occurrence | gate | lock | other`, `state` (occurrences) `running | hold`.
 */
import type { Command } from 'commander';
import { leaseViews } from '../../scheduler/observe/inspect.js';
import { wholeNumber } from '../arg-parsers.js';
import { withInspector } from '../inspect-session.js';
import { printJson, printText } from '../output.js';
import { type StoreFlags, withStoreOptions } from '../store-option.js';
import { formatDuration, formatTable, isoOrDash } from '../table.js';

interface LocksFlags extends StoreFlags {
  json?: boolean;
  all?: boolean;
  limit: number;
}

/** Leases read when done holds are left out, so that `--limit` counts the others. */
const MAX_READ = 10_000;

export function registerLocks(program: Command): void {
  withStoreOptions(program.command('locks').description('leases currently held (key, owner, token, times)'))
    .option('--limit <n>', 'at most this many leases', wholeNumber(1, 10_000), 100)
    .option('--all', 'also list the "done" holds of finished occurrences')
    .option('--json', 'print a JSON array')
    .action((flags: LocksFlags) =>
      withInspector(flags, async (_scheduler, store) => {
        const read = flags.all ? flags.limit : MAX_READ;
        const [leases, now] = await Promise.all([leaseViews(store, read), store.now()]);
        const holds = leases.filter((l) => l.state === 'hold').length;
        const shown = (flags.all ? leases : leases.filter((l) => l.state !== 'hold')).slice(0, flags.limit);
        if (flags.json) {
          printJson(
            shown.map((l) => ({
              ...l,
              acquiredAt: new Date(l.acquiredAt).toISOString(),
              expiresAt: new Date(l.expiresAt).toISOString(),
            })),
          );
          return;
        }
        const lines = [
          shown.length === 0
            ? holds > 0 && !flags.all
              ? 'No leases held by running work.'
              : 'No leases held.'
            : formatTable(
                ['KEY', 'KIND', 'OWNER', 'TOKEN', 'ACQUIRED', 'EXPIRES'],
                shown.map((l) => [
                  l.key,
                  l.state === undefined ? l.kind : `${l.kind} (${l.state})`,
                  l.owner,
                  String(l.token),
                  isoOrDash(l.acquiredAt),
                  `${isoOrDash(l.expiresAt)} (in ${formatDuration(l.expiresAt - now)})`,
                ]),
              ),
        ];
        if (holds > 0 && !flags.all)
          lines.push(
            `${holds} "done" hold${holds === 1 ? '' : 's'} of finished occurrences not listed (--all lists them).`,
          );
        if (leases.length >= read) lines.push(`Read the first ${read} leases by key; there may be more.`);
        printText(lines.join('\n'));
      }),
    );
}
