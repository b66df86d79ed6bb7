/**
 * `oncely trigger J`, `oncely pause J`, `oncely resume J`: cluster-wide control, stored in the
 * store and picked up by every node within about a second.
 *
 * A name no node has recorded (not in `status`) is accepted with a warning on stderr, not refused:
 * a job may be defined later (a deploy in progress, a node not started yet), and the request then
 * applies (a trigger request is kept for the history retention, 7 days by default).
 */
import type { Command } from 'commander';
import { validateJobName } from '../../scheduler/job-options.js';
import type { Scheduler } from '../../scheduler/scheduler.js';
import { checkedBy } from '../arg-parsers.js';
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
    withStoreOptions(
      program
        .command(action)
        .description(ACTIONS[action].description)
        // Checked before the store is opened: a name no job can have is a usage error, not "unknown".
        .argument('<job>', 'job name', checkedBy(validateJobName)),
    )
      .option('--json', 'print JSON: { job, action, known }')
      .action((job: string, flags: StoreFlags & { json?: boolean }) =>
        withInspector(flags, (scheduler) => control(scheduler, action, job, flags.json === true), {
          readOnly: false,
        }),
      );
  }
}

async function control(scheduler: Scheduler, action: Action, job: string, json: boolean): Promise<void> {
  const known = (await scheduler.jobs({ nextCount: 0 })).map((j) => j.name);
  const isKnown = known.includes(job);
  if (!isKnown) {
    warn(
      `no node has recorded a job named ${JSON.stringify(job)} in this store ` +
        `(known: ${known.length === 0 ? 'none' : known.join(', ')}); ` +
        `the ${action} request is stored anyway and applies once a node defines the job`,
    );
  }
  await scheduler[action](job);
  if (json) printJson({ job, action, known: isKnown });
  else printText(ACTIONS[action].done(job));
}
