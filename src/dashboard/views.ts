import { LOCK_KEY_PREFIX } from '../lock/validate.js';
import type { Trigger } from '../schedule/trigger.js';
import { jobOfKey, keys } from '../scheduler/keys.js';
import type { HistoryEntry, JobInfo, NodeInfo } from '../scheduler/types.js';
import type { Lease, Store } from '../store/types.js';
import { formatDuration, formatTime } from './html.js';

/**
 * What the pages and the JSON API show, in one place: JSON shapes (dates as ISO-8601 strings) and
 * the reading of lease keys.
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
    updatedAt: j.updatedAt.toISOString(),
  };
}

export function nodeJson(n: NodeInfo): Record<string, unknown> {
  return { ...n, startedAt: n.startedAt.toISOString(), lastSeen: n.lastSeen.toISOString() };
}

/**
 * What a lease key stands for: an occurrence claim (`occ|…`, also kept as a "done" hold after the
 * run), an overlap gate (`run|…`), a `tryLock`/`withLock` lock (`lock:…`), or something else.
 */
export type LeaseKind = 'occurrence' | 'gate' | 'lock' | 'other';

export interface LeaseView extends Lease {
  kind: LeaseKind;
  /** The job of an occurrence claim or gate; the name of a lock. */
  name?: string;
  /**
   * For occurrence claims: `running` while the run's inflight record exists, otherwise `hold`
   * (a finished occurrence's "done" marker, or a claim whose run is just starting).
   */
  state?: 'running' | 'hold';
}

export async function leaseViews(store: Store, limit: number): Promise<LeaseView[]> {
  const [leases, inflight] = await Promise.all([
    store.listLeases({ limit }),
    store.scan(keys.inflightPrefix(), { limit: 10_000 }),
  ]);
  const running = new Set(inflight.map((r) => keys.occurrenceOfInflight(r.key)));
  return leases.map((l) => {
    if (l.key.startsWith('occ|'))
      return {
        ...l,
        kind: 'occurrence',
        name: jobOfKey(l.key),
        state: running.has(l.key) ? 'running' : 'hold',
      };
    if (l.key.startsWith('run|')) return { ...l, kind: 'gate', name: jobOfKey(l.key) };
    if (l.key.startsWith(LOCK_KEY_PREFIX))
      return { ...l, kind: 'lock', name: l.key.slice(LOCK_KEY_PREFIX.length) };
    return { ...l, kind: 'other' };
  });
}

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
