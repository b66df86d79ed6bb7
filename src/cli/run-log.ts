/**
 * Turns a scheduler's events into `oncely run` log lines, one per run start and end:
 *
 *   started  job=backup fire=2024-05-01T03:00:00.000Z node=n1 attempt=1 token=17 source=schedule late=12ms
 *   finished job=backup fire=2024-05-01T03:00:00.000Z node=n1 attempt=1 status=succeeded duration=1.20s
 *
 * plus `skipped` (overlap) and `misfired` lines — one per job and tick: a replay, what was skipped,
 * or both (`misfired job=backup fire=… action=run skipped=295 first=… last=…`). Runs that `stop()` abandoned after the grace period
 * emit no event; `abandonedRuns()` lists what started here and never finished.
 */
import type { Scheduler } from '../scheduler/scheduler.js';
import type { RunEvent, SchedulerEvents } from '../scheduler/types.js';
import { runLabel } from './command-runner.js';
import type { CliLog } from './log.js';
import { formatDuration } from './table.js';

function runKey(e: Pick<RunEvent, 'job' | 'scheduleId' | 'fireTime' | 'shard' | 'attempt'>): string {
  return JSON.stringify([e.job, e.scheduleId ?? null, e.fireTime.getTime(), e.shard ?? null, e.attempt]);
}

export interface RunLog {
  /** Runs that started on this node and have not finished (after `stop()`: the abandoned ones). */
  abandonedRuns(): string[];
}

export function attachRunLog(scheduler: Scheduler, log: CliLog): RunLog {
  const started = new Map<string, { label: string; at: number }>();
  scheduler.on('started', (e) => {
    const label = runLabel(e.job, e.fireTime, e.shard);
    started.set(runKey(e), { label, at: performance.now() });
    const late = formatDuration(Math.max(0, e.startedAt.getTime() - e.fireTime.getTime()));
    log.line(
      `started  ${label} node=${e.node} attempt=${e.attempt} token=${e.token} source=${e.source} late=${late}`,
    );
  });
  const finished = (e: RunEvent, status: string, extra: string) => {
    const key = runKey(e);
    const run = started.get(key);
    started.delete(key);
    const duration = run ? formatDuration(performance.now() - run.at) : '?';
    log.line(
      `finished ${runLabel(e.job, e.fireTime, e.shard)} node=${e.node} attempt=${e.attempt} status=${status} duration=${duration}${extra}`,
    );
  };
  scheduler.on('succeeded', (e) => finished(e, 'succeeded', ''));
  scheduler.on('failed', (e) => {
    const first = (e.error instanceof Error ? e.error.message : String(e.error)).split('\n')[0] ?? '';
    finished(e, e.status, `${e.willRetry ? ' will-retry=yes' : ''} error=${JSON.stringify(first)}`);
  });
  scheduler.on('skipped', (e) => {
    log.line(
      `skipped  ${runLabel(e.job, e.fireTime, e.shard)} reason=${e.reason}` +
        (e.by === undefined
          ? ''
          : ` by=${e.by.fireTime.toISOString()}${e.by.node === undefined ? '' : ` by-node=${e.by.node}`}${e.by.token === undefined ? '' : ` by-token=${e.by.token}`}`),
    );
  });
  // One line per job (stored schedule) and tick: the scheduler reports all the fire times it skips
  // as one event and the one it replays as another, right after it (same turn of the event loop);
  // a replay's line says what was skipped with it.
  const skips = new Map<string, SchedulerEvents['misfired']>();
  const skippedText = (e: SchedulerEvents['misfired']) =>
    `skipped=${e.count ?? 'many'} first=${e.firstFireTime.toISOString()} last=${e.fireTime.toISOString()}`;
  const flushSkips = () => {
    for (const e of skips.values())
      log.line(`misfired ${runLabel(e.job, e.fireTime, undefined)} action=skipped ${skippedText(e)}`);
    skips.clear();
  };
  scheduler.on('misfired', (e) => {
    const key = JSON.stringify([e.job, e.scheduleId ?? null]);
    if (e.action === 'skipped') {
      if (skips.has(key)) flushSkips();
      if (skips.size === 0) queueMicrotask(flushSkips);
      skips.set(key, e);
      return;
    }
    const skipped = skips.get(key);
    skips.delete(key);
    log.line(
      `misfired ${runLabel(e.job, e.fireTime, undefined)} action=run${skipped ? ` ${skippedText(skipped)}` : ''}`,
    );
  });
  return { abandonedRuns: () => [...started.values()].map((r) => r.label) };
}
