/**
 * `oncely audit [--job J] [--schedule ID] [--after ID] [--limit N]`: the audit trail, newest first —
 * who changed what (a changed job definition, stored schedules upserted or removed, pauses,
 * resumes, triggers). A full page ends with the flag for the next one (`--after <last id>`).
 * `--json` prints a bare JSON array of AuditEntry (dates as ISO-8601 strings), newest first.
 * Read-only: the store is not migrated (inspect-session.ts).
 */
import type { Command } from 'commander';
import { validateScheduleId } from '../../scheduler/control/schedule-input.js';
import { validateJobName } from '../../scheduler/job-options.js';
import { validateAuditCursor } from '../../scheduler/observe/audit-query.js';
import { changeText } from '../../scheduler/observe/audit-text.js';
import type { AuditEntry } from '../../scheduler/types.js';
import { checkedBy, wholeNumber } from '../arg-parsers.js';
import { withInspector } from '../inspect-session.js';
import { printJson, printText } from '../output.js';
import { type StoreFlags, withStoreOptions } from '../store-option.js';
import { formatTable, isoOrDash, truncate } from '../table.js';

export const DEFAULT_AUDIT_LIMIT = 50;
/** The most `scheduler.audit` returns in one page. */
export const MAX_AUDIT_LIMIT = 1000;

interface AuditFlags extends StoreFlags {
  json?: boolean;
  job?: string;
  schedule?: string;
  after?: string;
  limit: number;
}

export function registerAudit(program: Command): void {
  withStoreOptions(program.command('audit').description('who changed what, newest first (the audit trail)'))
    .option(
      '--job <name>',
      'only this job (its definition, pauses, triggers and stored schedules)',
      checkedBy(validateJobName),
    )
    .option('--schedule <id>', 'only this stored schedule', checkedBy(validateScheduleId))
    .option(
      '--after <id>',
      'only entries older than this one (the last id of the previous page)',
      checkedBy(validateAuditCursor),
    )
    .option(
      '--limit <n>',
      `at most this many, up to ${MAX_AUDIT_LIMIT}`,
      wholeNumber(1, MAX_AUDIT_LIMIT),
      DEFAULT_AUDIT_LIMIT,
    )
    .option('--json', 'print a bare JSON array, newest first')
    .action((flags: AuditFlags) =>
      withInspector(flags, async (scheduler) => {
        const entries = await scheduler.audit({
          limit: flags.limit,
          ...(flags.job !== undefined && { job: flags.job }),
          ...(flags.schedule !== undefined && { scheduleId: flags.schedule }),
          ...(flags.after !== undefined && { after: flags.after }),
        });
        if (flags.json) return printJson(entries);
        if (entries.length === 0) return printText('No changes recorded.');
        const more = entries.length === flags.limit ? `\n\nolder: --after ${entries.at(-1)!.id}` : '';
        printText(auditTable(entries) + more);
      }),
    );
}

function auditTable(entries: AuditEntry[]): string {
  return formatTable(
    ['AT', 'ACTOR', 'ACTION', 'TARGET', 'CHANGE'],
    entries.map((e) => [
      isoOrDash(e.at),
      truncate(e.actor, 40),
      e.action,
      truncate(e.target, 60),
      changeText(e),
    ]),
  );
}
