/**
 * `oncely trigger J`, `oncely pause J`, `oncely resume J`: cluster-wide control, stored in the
 * store and picked up by every node within about a second. `--actor NAME` says who, for the audit
 * trail; `pause --note TEXT` says why (kept with the pause); `pause`/`resume --schedule ID` act on
 * one stored schedule of the job instead (docs/pause.md): an id not stored, or of another job,
 * exits 2 naming what is there.
 *
 * A name no node has recorded (not in `status`) is accepted with a warning on stderr, not refused:
 * a job may be defined later (a deploy in progress, a node not started yet), and the request then
 * applies (a trigger request is kept for the history retention, 7 days by default).
 */
import type { Command } from 'commander';
import { MAX_ACTOR_LENGTH, MAX_NOTE_LENGTH } from '../../scheduler/control/audit.js';
import { validateScheduleId } from '../../scheduler/control/schedule-input.js';
import { validateJobName } from '../../scheduler/job-options.js';
import type { Scheduler } from '../../scheduler/scheduler.js';
import { checkedBy } from '../arg-parsers.js';
import { UsageError } from '../exit.js';
import { withInspector } from '../inspect-session.js';
import { printJson, printText, warn } from '../output.js';
import { type StoreFlags, withStoreOptions } from '../store-option.js';

type Action = 'trigger' | 'pause' | 'resume';

const ACTIONS: Record<Action, { description: string; done: (job: string) => string }> = {
  trigger: {
    description: 'run the job once, now, on one node that defines it',
    done: (job) => `triggered ${JSON.stringify(job)}: one node defining it runs it within about a second`,
  },
  pause: {
    description: 'pause the job on every node',
    done: (job) => `paused ${JSON.stringify(job)} on every node`,
  },
  resume: {
    description: 'resume the job on every node (missed fire times follow its misfire policy)',
    done: (job) => `resumed ${JSON.stringify(job)} on every node`,
  },
};

export function registerControl(program: Command): void {
  for (const action of Object.keys(ACTIONS) as Action[]) {
    const command = withStoreOptions(
      program
        .command(action)
        .description(ACTIONS[action].description)
        // Checked before the store is opened: a name no job can have is a usage error, not "unknown".
        .argument('<job>', 'job name', checkedBy(validateJobName)),
    )
      .option('--json', 'print JSON: { job, action, known }')
      .option(
        '--actor <name>',
        `who makes the change, for the audit trail (1-${MAX_ACTOR_LENGTH} characters)`,
      );
    if (action === 'pause')
      command.option('--note <text>', `why, kept with the pause (at most ${MAX_NOTE_LENGTH} characters)`);
    if (action !== 'trigger')
      command.option(
        '--schedule <id>',
        `one stored schedule of the job instead of the whole job`,
        scheduleId,
      );
    command.action((job: string, flags: ControlFlags) =>
      withInspector(flags, (scheduler) => control(scheduler, action, job, flags), {
        readOnly: false,
      }),
    );
  }
}

interface ControlFlags extends StoreFlags {
  json?: boolean;
  actor?: string;
  note?: string;
  schedule?: string;
}

const scheduleId = checkedBy(validateScheduleId);

/** `pause`/`resume --schedule ID`: the stored schedule, checked to be the job's; a usage error naming what is there otherwise. */
async function scheduleControl(
  scheduler: Scheduler,
  action: 'pause' | 'resume',
  job: string,
  flags: ControlFlags,
) {
  const id = flags.schedule!;
  const found = await scheduler.schedules.get(id);
  if (!found)
    throw new UsageError(
      `no stored schedule has the id ${JSON.stringify(id)} (oncely schedules --job ${job} lists them)`,
    );
  if (found.job !== job)
    throw new UsageError(
      `schedule ${JSON.stringify(id)} is of job ${JSON.stringify(found.job)}, not ${JSON.stringify(job)}`,
    );
  const who = flags.actor === undefined ? {} : { actor: flags.actor };
  if (action === 'pause')
    await scheduler.schedules.pause(id, { ...who, ...(flags.note !== undefined && { note: flags.note }) });
  else await scheduler.schedules.resume(id, who);
  if (flags.json) printJson({ job, schedule: id, action, known: true });
  else
    printText(
      `${action === 'pause' ? 'paused' : 'resumed'} schedule ${JSON.stringify(id)} of ${JSON.stringify(job)} on every node`,
    );
}

async function control(
  scheduler: Scheduler,
  action: Action,
  job: string,
  flags: ControlFlags,
): Promise<void> {
  if (flags.schedule !== undefined && action !== 'trigger')
    return scheduleControl(scheduler, action, job, flags);
  const json = flags.json === true;
  const known = (await scheduler.jobs({ nextCount: 0 })).map((j) => j.name);
  const isKnown = known.includes(job);
  if (!isKnown) {
    warn(
      `no node has recorded a job named ${JSON.stringify(job)} in this store ` +
        `(known: ${known.length === 0 ? 'none' : known.join(', ')}); ` +
        `the ${action} request is stored anyway and applies once a node defines the job`,
    );
  }
  const who = flags.actor === undefined ? {} : { actor: flags.actor };
  if (action === 'pause')
    await scheduler.pause(job, { ...who, ...(flags.note !== undefined && { note: flags.note }) });
  else await scheduler[action](job, who);
  if (json) printJson({ job, action, known: isKnown });
  else printText(ACTIONS[action].done(job));
}
