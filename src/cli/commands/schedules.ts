/**
 * `oncely schedules [--job J] [--after ID] [--limit N]`: one page of stored schedules, ascending by
 * id, each with its next fire time (computed from its trigger after the store's now). A full page
 * ends with the command for the next one (`--after <last id>`); nothing reads more than one page.
 * `--json` prints a bare array of `{ id, job, trigger, timezone?, nextFireTime, data }`.
 *
 * `oncely schedules count [--job J]`: how many are stored (one store call); `--json`: `{ count, job? }`.
 */
import { Argument, type Command } from 'commander';
import { redactUrl, urlSecrets } from '../../core/redact.js';
import {
  abbreviateData,
  describeSchedulePause,
  describeScheduleTrigger,
  type ScheduleView,
  scheduleJson,
  scheduleViews,
} from '../../dashboard/schedule-view.js';
import { validateScheduleId } from '../../scheduler/control/schedule-input.js';
import { validateJobName } from '../../scheduler/job-options.js';
import { checkedBy, wholeNumber } from '../arg-parsers.js';
import { UsageError } from '../exit.js';
import { withInspector } from '../inspect-session.js';
import { printJson, printText } from '../output.js';
import { type StoreFlags, withStoreOptions } from '../store-option.js';
import { formatTable, isoOrDash, truncate } from '../table.js';

export const DEFAULT_SCHEDULES_LIMIT = 100;
/** The most `scheduler.schedules.list` returns in one page. */
export const MAX_SCHEDULES_LIMIT = 1000;

interface SchedulesFlags extends StoreFlags {
  json?: boolean;
  job?: string;
  after?: string;
  limit: number;
}

const jobName = checkedBy(validateJobName);
const scheduleId = checkedBy(validateScheduleId);

export function registerSchedules(program: Command): void {
  withStoreOptions(
    program
      .command('schedules')
      .description('stored schedules, one page at a time, ascending by id; `schedules count`: how many')
      // An argument, not a subcommand: the parent's options would otherwise take `count --json`'s flags.
      .addArgument(
        new Argument('[count]', 'print how many are stored (with --job: of that job)').choices(['count']),
      ),
  )
    .option('--job <name>', 'only this job', jobName)
    .option('--after <id>', 'only ids after this one (the last id of the previous page)', scheduleId)
    .option(
      '--limit <n>',
      `at most this many, up to ${MAX_SCHEDULES_LIMIT}`,
      wholeNumber(1, MAX_SCHEDULES_LIMIT),
      DEFAULT_SCHEDULES_LIMIT,
    )
    .option('--json', 'print a bare JSON array, ascending by id (count: { count, job? })')
    .action((what: 'count' | undefined, flags: SchedulesFlags, command: Command) => {
      if (what === 'count') {
        if (flags.after !== undefined || command.getOptionValueSource('limit') === 'cli')
          throw new UsageError('schedules count takes --job and --json only (no --after or --limit)');
        return withInspector(flags, async (scheduler) => {
          const count = await scheduler.schedules.count(flags.job !== undefined ? { job: flags.job } : {});
          if (flags.json) printJson({ count, ...(flags.job !== undefined && { job: flags.job }) });
          else printText(String(count));
        });
      }
      return withInspector(flags, async (scheduler, store) => {
        const [page, now] = await Promise.all([
          scheduler.schedules.list({
            limit: flags.limit,
            ...(flags.job !== undefined && { job: flags.job }),
            ...(flags.after !== undefined && { after: flags.after }),
          }),
          store.now(),
        ]);
        const views = scheduleViews(
          page.map((schedule) => ({ schedule })),
          now,
        );
        if (flags.json) printJson(views.map(scheduleJson));
        else printText(schedulesText(views, flags));
      });
    });
}

/** A word as a shell would read it back: as is when it is plain, else single-quoted. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

function schedulesText(views: ScheduleView[], flags: SchedulesFlags): string {
  if (views.length === 0)
    return flags.after === undefined
      ? 'No stored schedules.'
      : `No stored schedules after ${shellWord(flags.after)}.`;
  let table = formatTable(
    ['ID', 'JOB', 'TRIGGER', 'TIME ZONE', 'NEXT FIRE', 'DATA'],
    views.map(({ schedule: s, next }) => [
      s.id,
      s.job,
      describeScheduleTrigger(s),
      s.cron === undefined ? '-' : (s.timezone ?? 'UTC'),
      s.pause ? '(paused)' : s.ended === true ? '(ended)' : isoOrDash(next),
      truncate(abbreviateData(s.data, 60), 60),
    ]),
  );
  // One line per paused schedule: since when, by whom, and the note (`schedules.pause(id, { note })`).
  const paused = views.flatMap(({ schedule: s }) => {
    const line = describeSchedulePause(s);
    return line === undefined ? [] : [`${s.id}: ${line}`];
  });
  if (paused.length > 0) table = `${table}\n\n${paused.join('\n')}`;
  if (views.length < flags.limit) return table;
  const { command, redacted } = nextPageCommand(flags, views.at(-1)!.schedule.id);
  const note = redacted
    ? "\n(The store URL's password is shown as ***: put it back, or pass the URL in $ONCELY_STORE instead.)"
    : '';
  return `${table}\n\nMore may follow (the page is full). Next page: ${command}${note}`;
}

/**
 * The command that prints the page after `lastId`: every flag given again (`--store`, `--prefix`,
 * `--job`, `--limit`), each value quoted for a shell, the store URL in its redacted form —
 * `redacted` says whether that hid a password.
 *
 * @example
 * nextPageCommand({ store: 'sqlite:./a.db', limit: 10 }, 'u-9').command
 * // 'oncely schedules --store sqlite:./a.db --limit 10 --after u-9'
 */
export function nextPageCommand(
  flags: Omit<SchedulesFlags, 'json' | 'after'>,
  lastId: string,
): { command: string; redacted: boolean } {
  const store = flags.store === undefined ? undefined : redactUrl(flags.store);
  const command = [
    'oncely schedules',
    ...(store !== undefined ? ['--store', shellWord(store)] : []),
    ...(flags.prefix !== undefined ? ['--prefix', shellWord(flags.prefix)] : []),
    ...(flags.job !== undefined ? ['--job', shellWord(flags.job)] : []),
    ...(flags.limit !== DEFAULT_SCHEDULES_LIMIT ? ['--limit', String(flags.limit)] : []),
    '--after',
    shellWord(lastId),
  ].join(' ');
  return { command, redacted: flags.store !== undefined && urlSecrets(flags.store).length > 0 };
}
