/**
 * `oncely history [--job J] [--limit N]`: runs, newest fire time first. `--json` prints a bare
 * JSON array of HistoryEntry (dates as ISO-8601 strings), newest first, at most `--limit` entries.
 */
import type { Command } from 'commander';
import type { HistoryEntry } from '../../scheduler/types.js';
import { wholeNumber } from '../arg-parsers.js';
import { withInspector } from '../inspect-session.js';
import { printJson, printText } from '../output.js';
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
      withInspector(flags, async (scheduler) => {
        const entries = await scheduler.history({
          limit: flags.limit,
          ...(flags.job !== undefined && { job: flags.job }),
        });
        if (flags.json) printJson(entries);
        else printText(entries.length === 0 ? 'No runs recorded.' : historyTable(entries));
      }),
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
      truncate(
        (e.error ?? e.output ?? '')
          .trim()
          .split('\n')
          .at(e.error ? 0 : -1) ?? '',
        70,
      ),
    ]),
  );
}
