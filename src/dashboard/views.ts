import type { Trigger } from '../schedule/trigger.js';
import type { LeaseView } from '../scheduler/observe/inspect.js';
import type { HistoryEntry, JobInfo, NodeInfo } from '../scheduler/types.js';
import { formatDuration, formatTime } from './html.js';

/**
 * What the pages and the JSON API show, in one place: JSON shapes (dates as ISO-8601 strings). The
 * reading of lease keys is the scheduler's (`leaseViews`, shared with `oncely locks`).
 */

export interface HistoryJson {
  job: string;
  scheduleId?: string;
  fireTime: string;
  shard?: number;
  node: string;
  attempt: number;
  token: number;
  source: string;
  status: string;
  startedAt: string;
  finishedAt?: string;
  durationMs?: number;
  error?: string;
  output?: string;
}

export function historyJson(e: HistoryEntry): HistoryJson {
  return {
    job: e.job,
    ...(e.scheduleId !== undefined && { scheduleId: e.scheduleId }),
    fireTime: e.fireTime.toISOString(),
    ...(e.shard !== undefined && { shard: e.shard }),
    node: e.node,
    attempt: e.attempt,
    token: e.token,
    source: e.source,
    status: e.status,
    startedAt: e.startedAt.toISOString(),
    ...(e.finishedAt && {
      finishedAt: e.finishedAt.toISOString(),
      durationMs: e.finishedAt.getTime() - e.startedAt.getTime(),
    }),
    ...(e.error !== undefined && { error: e.error }),
    ...(e.output !== undefined && { output: e.output }),
  };
}

export interface JobJson {
  name: string;
  trigger: Trigger | null;
  paused: boolean;
  nextFireTimes: string[];
  lastRun: HistoryJson | null;
  options: Record<string, unknown>;
  nodes: string[];
  /** Whether a live node defines the job (`nodes` not empty); false: nothing runs it. */
  live: boolean;
  updatedAt: string;
}

export function jobJson(j: JobInfo): JobJson {
  const trigger =
    j.trigger && 'at' in j.trigger
      ? { at: new Date(j.trigger.at as string | number).toISOString() }
      : j.trigger;
  return {
    name: j.name,
    trigger,
    paused: j.paused,
    nextFireTimes: j.nextFireTimes.map((d) => d.toISOString()),
    lastRun: j.lastRun ? historyJson(j.lastRun) : null,
    options: j.options,
    nodes: j.nodes,
    live: j.nodes.length > 0,
    updatedAt: j.updatedAt.toISOString(),
  };
}

export function nodeJson(n: NodeInfo): Record<string, unknown> {
  return { ...n, startedAt: n.startedAt.toISOString(), lastSeen: n.lastSeen.toISOString() };
}

export { type LeaseKind, type LeaseView, leaseViews } from '../scheduler/observe/inspect.js';

export function leaseJson(l: LeaseView): Record<string, unknown> {
  return {
    ...l,
    acquiredAt: new Date(l.acquiredAt).toISOString(),
    expiresAt: new Date(l.expiresAt).toISOString(),
  };
}

/** `cron 0 9 * * * (Europe/Berlin)`, `every 10s`, `at 2024-05-01 10:00:00.000Z`. */
export function describeTrigger(t: Trigger | null): string {
  if (!t) return 'none (manual and stored schedules)';
  if ('cron' in t) return `cron ${t.cron} (${t.timezone ?? 'UTC'})`;
  if ('every' in t) return `every ${typeof t.every === 'number' ? formatDuration(t.every) : t.every}`;
  return `at ${formatTime(new Date(t.at as string | number))}`;
}

/** Run time of a finished attempt, or how long a running one has been going. */
export function runDuration(e: HistoryEntry, now: number): string {
  if (e.finishedAt) return formatDuration(e.finishedAt.getTime() - e.startedAt.getTime());
  if (e.status === 'running') return `${formatDuration(now - e.startedAt.getTime())} so far`;
  return '—';
}
