/**
 * `oncely next <job> [--schedule ID] [--count N]`: the next starts that will really happen, from
 * the records the nodes write (no job need be defined here): the job's own trigger, or with
 * `--schedule` one of its stored schedules; each fire time plus its jitter offset, nothing while
 * the job is paused (`scheduler.next` / `scheduler.schedules.next`, docs/next.md).
 * `--json` prints a bare JSON array of ISO-8601 start times, ascending.
 *
 * A job no node has recorded, a schedule id not stored, or a schedule of another job is a usage
 * error (exit 2) naming what is there. A job no live node defines gets a note (on stderr with
 * `--json`): its starts are when it would run, were a node running it.
 */
import type { Command } from 'commander';
import { OncelyError } from '../../core/errors.js';
import { validateScheduleId } from '../../scheduler/control/schedule-input.js';
import { validateJobName } from '../../scheduler/job-options.js';
import { liveNodesOf } from '../../scheduler/observe/inspect.js';
import { DEFAULT_NEXT_COUNT, MAX_NEXT_COUNT } from '../../scheduler/observe/next-runs.js';
import type { Scheduler } from '../../scheduler/scheduler.js';
import { checkedBy, wholeNumber } from '../arg-parsers.js';
import { UsageError } from '../exit.js';
import { withInspector } from '../inspect-session.js';
import { printJson, printText, warn } from '../output.js';
import { type StoreFlags, withStoreOptions } from '../store-option.js';
import { formatDuration, formatTable } from '../table.js';

interface NextFlags extends StoreFlags {
  json?: boolean;
  schedule?: string;
  count: number;
}

export function registerNext(program: Command): void {
  withStoreOptions(
    program
      .command('next')
      .description("a job's next starts that will really happen (jitter and pause applied)")
      .argument('<job>', 'the job', checkedBy(validateJobName)),
  )
    .option(
      '--schedule <id>',
      "one of the job's stored schedules instead of its own trigger",
      checkedBy(validateScheduleId),
    )
    .option(
      '--count <n>',
      `how many, up to ${MAX_NEXT_COUNT}`,
      wholeNumber(1, MAX_NEXT_COUNT),
      DEFAULT_NEXT_COUNT,
    )
    .option('--json', 'print a bare JSON array of ISO-8601 start times, ascending')
    .action((job: string, flags: NextFlags) =>
      withInspector(flags, async (scheduler, store) => {
        const [starts, now, live] = await Promise.all([
          startsOf(scheduler, job, flags),
          store.now(),
          liveNodesOf(store, job),
        ]);
        const note =
          live.length === 0
            ? `No live node defines ${JSON.stringify(job)}: these are when it would start, were a node running it.`
            : undefined;
        if (flags.json) {
          if (note !== undefined) warn(note);
          printJson(starts);
          return;
        }
        const what =
          flags.schedule === undefined ? 'its own trigger' : `schedule ${JSON.stringify(flags.schedule)}`;
        if (starts.length === 0) {
          printText(
            `No starts ahead for ${JSON.stringify(job)} (${what}): ${await whyNone(scheduler, job, flags.schedule !== undefined)}`,
          );
          return;
        }
        const table = formatTable(
          ['START', 'IN'],
          starts.map((d) => [
            d.toISOString(),
            d.getTime() <= now ? 'due now' : formatDuration(d.getTime() - now),
          ]),
        );
        printText(note === undefined ? table : `${table}\n${note}`);
      }),
    );
}

/** The starts asked for; a job or schedule that is not there is a usage error naming what is. */
async function startsOf(scheduler: Scheduler, job: string, flags: NextFlags): Promise<Date[]> {
  try {
    if (flags.schedule === undefined) return await scheduler.next(job, { count: flags.count });
    const schedule = await scheduler.schedules.get(flags.schedule);
    if (schedule !== undefined && schedule.job !== job)
      throw new UsageError(
        `schedule ${JSON.stringify(flags.schedule)} belongs to job ${JSON.stringify(schedule.job)}, not ${JSON.stringify(job)}`,
      );
    return await scheduler.schedules.next(flags.schedule, { count: flags.count });
  } catch (err) {
    if (!(err instanceof OncelyError && err.code === 'NOT_FOUND')) throw err;
    if (flags.schedule !== undefined)
      throw new UsageError(
        `no stored schedule has the id ${JSON.stringify(flags.schedule)} (oncely schedules --job ${job} lists them)`,
      );
    const known = (await scheduler.jobs({ nextCount: 0 })).map((j) => j.name);
    throw new UsageError(
      `no job named ${JSON.stringify(job)} is recorded in this store (known jobs: ${known.length === 0 ? 'none' : known.join(', ')})`,
    );
  }
}

/** Why a recorded job (or its schedule) lists nothing: paused, no trigger of its own, or a trigger that ended. */
async function whyNone(scheduler: Scheduler, job: string, ofSchedule: boolean): Promise<string> {
  const info = (await scheduler.jobs({ nextCount: 0 })).find((j) => j.name === job);
  if (info?.paused) return 'the job is paused (oncely resume to resume it).';
  if (!ofSchedule && info?.trigger === null)
    return 'it has no trigger of its own (it runs from stored schedules and triggers).';
  return 'its trigger has no fire time ahead.';
}
