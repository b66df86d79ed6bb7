/**
 * `oncely backfill <job> --from ISO --to ISO [--schedule ID]`: runs once each fire time of the
 * job's own trigger (or of one of its stored schedules) in `[from, to)` that has not run, in
 * order, on the nodes that define the job (`scheduler.backfill`, docs/backfill.md). Prints how
 * many runs it queued; `--json` prints `{ job, scheduleId?, from, to, queued }`.
 *
 * A job no node has recorded, a schedule id not stored or of another job, a range that is empty,
 * reaches past the store's clock or holds more than 10,000 occurrences: a usage error (exit 2)
 * saying what to fix.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { OncelyError } from '../../core/errors.js';
import { validateScheduleId } from '../../scheduler/control/schedule-input.js';
import { validateJobName } from '../../scheduler/job-options.js';
import { checkedBy } from '../arg-parsers.js';
import { UsageError } from '../exit.js';
import { withInspector } from '../inspect-session.js';
import { printJson, printText } from '../output.js';
import { type StoreFlags, withStoreOptions } from '../store-option.js';

interface BackfillFlags extends StoreFlags {
  from: Date;
  to: Date;
  schedule?: string;
  json?: boolean;
}

/** `--from 2026-12-01T00:00:00Z`: an ISO-8601 date-time (or date) with a time zone or `Z`, as a Date. */
function isoInstant(value: string): Date {
  const ok = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/.test(value.trim());
  const at = ok ? new Date(value.trim()) : undefined;
  if (at === undefined || Number.isNaN(at.getTime()))
    throw new InvalidArgumentError("use an ISO-8601 instant, e.g. '2026-12-01T09:00:00Z' or '2026-12-01'");
  return at;
}

export function registerBackfill(program: Command): void {
  withStoreOptions(
    program
      .command('backfill')
      .description('run once each past fire time in [--from, --to) that has not run (in order)')
      .argument('<job>', 'the job', checkedBy(validateJobName)),
  )
    .requiredOption('--from <iso>', 'the first instant of the range (inclusive)', isoInstant)
    .requiredOption('--to <iso>', 'the end of the range (exclusive), not after now', isoInstant)
    .option(
      '--schedule <id>',
      "one of the job's stored schedules instead of its own trigger",
      checkedBy(validateScheduleId),
    )
    .option('--json', 'print JSON: { job, scheduleId?, from, to, queued }')
    .action((job: string, flags: BackfillFlags) =>
      withInspector(
        flags,
        async (scheduler) => {
          const { from, to, schedule: scheduleId } = flags;
          let queued: number;
          try {
            ({ queued } = await scheduler.backfill({
              job,
              ...(scheduleId !== undefined && { scheduleId }),
              from,
              to,
            }));
          } catch (err) {
            // A job or schedule that is not there is the user's to fix, as a bad range is.
            if (err instanceof OncelyError && err.code === 'NOT_FOUND') throw new UsageError(err.message);
            throw err;
          }
          if (flags.json) {
            printJson({
              job,
              ...(scheduleId !== undefined && { scheduleId }),
              from: from.toISOString(),
              to: to.toISOString(),
              queued,
            });
            return;
          }
          const what = scheduleId === undefined ? '' : ` (schedule ${JSON.stringify(scheduleId)})`;
          printText(
            queued === 0
              ? `nothing to backfill for ${JSON.stringify(job)}${what}: every fire time in the range has run or is queued`
              : `queued ${queued} backfill run${queued === 1 ? '' : 's'} of ${JSON.stringify(job)}${what}: the nodes defining it run them in order`,
          );
        },
        { readOnly: false },
      ),
    );
}
