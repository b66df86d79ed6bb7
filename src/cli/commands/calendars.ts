/**
 * `oncely calendars [list] [--after ID] [--limit N]`, `oncely calendars get ID`,
 * `oncely calendars upsert FILE`, `oncely calendars remove ID`: the shared calendars that
 * exclusions name (`exclude: [{ calendar: id }]`, docs/calendars.md). `upsert` reads a JSON file
 * `{ id, dates: ['YYYY-MM-DD', …], timezone? }` (`-` for stdin is not read: give a file); its
 * change, like `remove`'s, is on the audit trail, and every node uses it from its next poll on.
 * `--json` prints what `scheduler.calendars` returns (`get` of an unknown id: `null`, exit 0 only
 * for `--json`; otherwise exit 2 naming it).
 */
import { readFileSync } from 'node:fs';
import { Argument, type Command } from 'commander';
import { validateCalendarId } from '../../schedule/exclude.js';
import type { Calendar } from '../../scheduler/control/calendars.js';
import { checkedBy, wholeNumber } from '../arg-parsers.js';
import { UsageError } from '../exit.js';
import { withInspector } from '../inspect-session.js';
import { printJson, printText } from '../output.js';
import { type StoreFlags, withStoreOptions } from '../store-option.js';
import { formatTable, truncate } from '../table.js';

interface CalendarsFlags extends StoreFlags {
  json?: boolean;
  after?: string;
  limit: number;
}

/** A calendar file read by `upsert` at most (10,000 dates are ~130 KB as JSON). */
const MAX_FILE_BYTES = 1024 * 1024;
const calendarId = checkedBy((id: string) => validateCalendarId(id));

export function registerCalendars(program: Command): void {
  withStoreOptions(
    program
      .command('calendars')
      .description('shared calendars of dates that exclusions skip: list, get ID, upsert FILE, remove ID')
      .addArgument(new Argument('[action]', 'what to do').choices(['list', 'get', 'upsert', 'remove']))
      .argument('[target]', 'the calendar id (get, remove) or the JSON file (upsert)'),
  )
    .option('--after <id>', 'list: only ids after this one', calendarId)
    .option('--limit <n>', 'list: at most this many, up to 100', wholeNumber(1, 100), 100)
    .option('--json', 'print JSON')
    .action((action: string | undefined, target: string | undefined, flags: CalendarsFlags) => {
      const what = action ?? 'list';
      if (what === 'list') {
        if (target !== undefined)
          throw new UsageError('calendars list takes no argument (use --after to page)');
        return withInspector(flags, async (scheduler) => {
          const page = await scheduler.calendars.list({
            limit: flags.limit,
            ...(flags.after !== undefined && { after: flags.after }),
          });
          if (flags.json) printJson(page);
          else printText(listText(page));
        });
      }
      if (target === undefined)
        throw new UsageError(
          `calendars ${what} needs ${what === 'upsert' ? 'a JSON file' : 'a calendar id'}`,
        );
      if (what === 'get') {
        const id = idArgument(target);
        return withInspector(flags, async (scheduler) => {
          const found = await scheduler.calendars.get(id);
          if (flags.json) return printJson(found ?? null);
          if (!found)
            throw new UsageError(
              `no calendar ${JSON.stringify(id)} in this store (oncely calendars lists them)`,
            );
          printText(calendarText(found));
        });
      }
      if (what === 'remove') {
        const id = idArgument(target);
        return withInspector(
          flags,
          async (scheduler) => {
            const removed = await scheduler.calendars.remove(id);
            if (flags.json) printJson({ id, removed });
            else
              printText(
                removed ? `removed calendar ${JSON.stringify(id)}` : `no calendar ${JSON.stringify(id)}`,
              );
          },
          { readOnly: false },
        );
      }
      const calendar = readCalendarFile(target);
      return withInspector(
        flags,
        async (scheduler) => {
          await scheduler.calendars.upsert(calendar);
          if (flags.json) printJson({ id: calendar.id, dates: calendar.dates.length });
          else printText(`stored calendar ${JSON.stringify(calendar.id)} (${calendar.dates.length} dates)`);
        },
        { readOnly: false },
      );
    });
}

/** A calendar id given as the argument: a bad one is a usage error naming the rule. */
function idArgument(id: string): string {
  try {
    return validateCalendarId(id);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function readCalendarFile(file: string): Calendar {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read calendar file ${file}: ${(err as Error).message}`);
  }
  if (Buffer.byteLength(text) > MAX_FILE_BYTES)
    throw new UsageError(
      `calendar file ${file} is over ${MAX_FILE_BYTES} bytes; a calendar holds at most 10,000 dates`,
    );
  try {
    return JSON.parse(text) as Calendar;
  } catch (err) {
    throw new UsageError(
      `calendar file ${file} is not JSON (${(err as Error).message}); write { "id": "…", "dates": ["2026-12-25"], "timezone": "Europe/Berlin" }`,
    );
  }
}

function listText(page: Calendar[]): string {
  if (page.length === 0) return 'No calendars.';
  return formatTable(
    ['ID', 'TIME ZONE', 'DATES', 'FIRST', 'LAST', 'UPDATED'],
    page.map((c) => [
      c.id,
      c.timezone ?? '-',
      String(c.dates.length),
      c.dates[0] ?? '-',
      c.dates.at(-1) ?? '-',
      c.updatedAt?.toISOString() ?? '-',
    ]),
  );
}

function calendarText(c: Calendar): string {
  return [
    `id:        ${c.id}`,
    `time zone: ${c.timezone ?? '(the excluding trigger’s, else UTC)'}`,
    `updated:   ${c.updatedAt?.toISOString() ?? '-'}`,
    `dates:     ${c.dates.length}`,
    ...c.dates.map((d) => `  ${truncate(d, 10)}`),
  ].join('\n');
}
