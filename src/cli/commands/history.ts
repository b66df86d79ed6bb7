/**
 * `oncely history [--job J] [--limit N]`: runs, newest fire time first. `--json` prints a bare
 * JSON array of HistoryEntry (dates as ISO-8601 strings), newest first, at most `--limit` entries.
 *
 * A `--job` the store knows nothing of (no definition, history, control record or stored schedule:
 * `jobKnown`) is said to be unknown, naming the jobs that are defined, instead of "No runs
 * recorded." (on stderr with `--json`, which still prints `[]`). Exit 0 either way: a job may be
 * defined later, as for `trigger`/`pause`.
 */
import type { Command } from 'commander';
import { jobKnown } from '../../scheduler/observe/inspect.js';
import { skipText } from '../../scheduler/observe/skip-text.js';
import type { Scheduler } from '../../scheduler/scheduler.js';
import type { HistoryEntry } from '../../scheduler/types.js';
import type { Store } from '../../store/types.js';
import { wholeNumber } from '../arg-parsers.js';
import { withInspector } from '../inspect-session.js';
import { printJson, printText, warn } from '../output.js';
import { type StoreFlags, withStoreOptions } from '../store-option.js';
import { formatDuration, formatTable, isoOrDash, truncate } from '../table.js';

export const DEFAULT_HISTORY_LIMIT = 50;

interface HistoryFlags extends StoreFlags {
  json?: boolean;
  job?: string;
  limit: number;
}

export function registerHistory(program: Command): void {
  withStoreOptions(program.command('history').description('recent runs, newest fire time first'))
    .option('--job <name>', 'only this job')
    .option('--limit <n>', 'at most this many entries', wholeNumber(1, 10_000), DEFAULT_HISTORY_LIMIT)
    .option('--json', 'print a bare JSON array, newest first')
    .action((flags: HistoryFlags) =>
      withInspector(flags, async (scheduler, store) => {
        const entries = await scheduler.history({
          limit: flags.limit,
          ...(flags.job !== undefined && { job: flags.job }),
        });
        const unknown =
          entries.length === 0 && flags.job !== undefined
            ? await unknownJobMessage(scheduler, store, flags.job)
            : undefined;
        if (flags.json) {
          if (unknown !== undefined) warn(unknown);
          printJson(entries);
        } else {
          printText(unknown ?? (entries.length === 0 ? 'No runs recorded.' : historyTable(entries)));
        }
      }),
    );
}

/** Why `job` has no history when the store knows nothing of it; `undefined` when it does. */
async function unknownJobMessage(
  scheduler: Scheduler,
  store: Store,
  job: string,
): Promise<string | undefined> {
  if (await jobKnown(store, job)) return undefined;
  const defined = (await scheduler.jobs({ nextCount: 0 })).map((j) => j.name);
  return (
    `No job named ${JSON.stringify(job)} is known to this store: no node has defined it, and it has ` +
    `no history, stored schedule or control record (known jobs: ${defined.length === 0 ? 'none' : defined.join(', ')}).`
  );
}

function historyTable(entries: HistoryEntry[]): string {
  return formatTable(
    ['FIRE TIME', 'JOB', 'SHARD', 'ATTEMPT', 'STATUS', 'NODE', 'SOURCE', 'DURATION', 'DETAIL'],
    entries.map((e) => [
      isoOrDash(e.fireTime),
      e.job,
      e.shard === undefined ? '-' : String(e.shard),
      String(e.attempt),
      e.status,
      e.node,
      e.source,
      e.finishedAt ? formatDuration(e.finishedAt.getTime() - e.startedAt.getTime()) : '-',
      e.status === 'skipped'
        ? skipText(e)
        : truncate(
            (e.error ?? e.output ?? '')
              .trim()
              .split('\n')
              .at(e.error ? 0 : -1) ?? '',
            70,
          ),
    ]),
  );
}
