/**
 * `oncely status`: every job recorded in the store (records outlive the nodes that defined them)
 * with its trigger, pause state, next fire time and last run, then the live nodes.
 * `--json` prints `{ "jobs": JobInfo[], "nodes": NodeInfo[], "pausedSchedules": [...] }` (the first
 * 20 paused stored schedules: `{ id, job, since, actor?, note? }`).
 */
import type { Command } from 'commander';
import { pausedSchedules } from '../../scheduler/control/schedule-pause.js';
import type { JobInfo, NodeInfo } from '../../scheduler/types.js';
import { describeTrigger } from '../describe-trigger.js';
import { withInspector } from '../inspect-session.js';
import { printJson, printText } from '../output.js';
import { type StoreFlags, withStoreOptions } from '../store-option.js';
import { formatTable, isoOrDash, truncate } from '../table.js';
import { nodesTable } from './nodes.js';

/** Paused stored schedules `oncely status` lists (`--json`: `pausedSchedules`); `oncely schedules` shows every one. */
const PAUSED_SHOWN = 20;

export function registerStatus(program: Command): void {
  withStoreOptions(program.command('status').description('jobs recorded in the store, and live nodes'))
    .option('--json', 'print JSON: { jobs, nodes }')
    .action((flags: StoreFlags & { json?: boolean }) =>
      withInspector(flags, async (scheduler, store) => {
        const [jobs, nodes, schedules] = await Promise.all([
          scheduler.jobs({ nextCount: 1 }),
          scheduler.nodes(),
          pausedSchedules(store, PAUSED_SHOWN + 1),
        ]);
        if (flags.json) printJson({ jobs, nodes, pausedSchedules: schedules.slice(0, PAUSED_SHOWN) });
        else printText(statusText(jobs, nodes, schedules));
      }),
    );
}

/**
 * The NEXT FIRE cell, as the dashboard has it: a job no live node defines fires nowhere (its
 * trigger's next time is when it would, were a node running), so it is "not scheduled".
 */
function nextFire(j: JobInfo): string {
  if (j.nodes.length === 0) return 'not scheduled (no live node)';
  return j.paused ? '(paused)' : isoOrDash(j.nextFireTimes[0]);
}

/** One line per paused job: since when, by whom, and the note given (`pause(job, { note })`). */
function pauseLines(jobs: JobInfo[]): string {
  const lines = jobs.flatMap((j) =>
    j.pause
      ? [
          `paused ${j.name} since ${isoOrDash(j.pause.since)}${j.pause.actor ? ` by ${j.pause.actor}` : ''}` +
            (j.pause.note ? `: ${truncate(j.pause.note.replace(/\s+/g, ' '), 200)}` : ''),
        ]
      : [],
  );
  return lines.length === 0 ? '' : `\n\n${lines.join('\n')}`;
}

/** One line per paused stored schedule (`schedules.pause(id, { note })`), the first PAUSED_SHOWN of them. */
function schedulePauseLines(schedules: Awaited<ReturnType<typeof pausedSchedules>>): string {
  if (schedules.length === 0) return '';
  const lines = schedules
    .slice(0, PAUSED_SHOWN)
    .map(
      (s) =>
        `paused schedule ${s.id} (job ${s.job}) since ${isoOrDash(s.since)}${s.actor ? ` by ${s.actor}` : ''}` +
        (s.note ? `: ${truncate(s.note.replace(/\s+/g, ' '), 200)}` : ''),
    );
  if (schedules.length > PAUSED_SHOWN) lines.push(`(more paused schedules: oncely schedules lists them all)`);
  return `\n\n${lines.join('\n')}`;
}

function statusText(
  jobs: JobInfo[],
  nodes: NodeInfo[],
  schedules: Awaited<ReturnType<typeof pausedSchedules>>,
): string {
  const jobPart =
    jobs.length === 0
      ? 'No jobs recorded in this store yet (start `oncely run FILE`).'
      : formatTable(
          ['JOB', 'TRIGGER', 'PAUSED', 'NEXT FIRE', 'LAST RUN', 'LAST STATUS', 'NODES'],
          jobs.map((j) => [
            j.name,
            describeTrigger(j.trigger),
            j.paused ? 'yes' : 'no',
            nextFire(j),
            isoOrDash(j.lastRun?.fireTime),
            j.lastRun ? `${j.lastRun.status} on ${j.lastRun.node}` : '-',
            j.nodes.length === 0 ? '(none live)' : j.nodes.join(','),
          ]),
        );
  const nodePart = nodes.length === 0 ? 'No live nodes.' : nodesTable(nodes);
  return `${jobPart}${pauseLines(jobs)}${schedulePauseLines(schedules)}\n\n${nodePart}`;
}
