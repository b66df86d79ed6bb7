import { LOCK_KEY_PREFIX } from '../../lock/validate.js';
import { bounded, recordedBounds } from '../../schedule/bounds.js';
import { nextFireTimes } from '../../schedule/fire-times.js';
import { compileTrigger, type Trigger } from '../../schedule/trigger.js';
import type { Lease, Store } from '../../store/types.js';
import { decodeHistory } from '../finish/history.js';
import { jobOfKey, keys } from '../keys.js';
import type { HistoryEntry, JobInfo, NodeInfo } from '../types.js';

/**
 * Read-only views of what the scheduler keeps in the store, for processes that define no jobs
 * (the CLI's `status`, the dashboard). Each reads records only; none takes a lease.
 */

/** What a node writes as its heartbeat (see Scheduler.heartbeat). */
interface HeartbeatRecord extends Omit<NodeInfo, 'startedAt' | 'lastSeen'> {
  startedAt: number;
  lastSeen: number;
  jobs?: string[];
  beatMs?: number;
  stopping?: boolean;
}

/** What `define` records per job (see Feed.registerJobs). */
interface JobRecord {
  name: string;
  trigger: Trigger | null;
  options: Record<string, unknown>;
  definedBy: string;
  updatedAt: number;
}

async function heartbeats(store: Store): Promise<HeartbeatRecord[]> {
  const records = await store.scan(keys.nodePrefix, { limit: 10_000 });
  return records.map((r) => JSON.parse(r.value) as HeartbeatRecord);
}

/** The nodes (ids) of `beats` that define `job` and are not stopping: those that would run it. */
function definers(beats: HeartbeatRecord[], job: string): string[] {
  return beats.filter((n) => !n.stopping && n.jobs?.includes(job)).map((n) => n.id);
}

/** The live nodes (heartbeat not expired, not stopping) that define `job`: one scan of the heartbeats. */
export async function liveNodesOf(store: Store, job: string): Promise<string[]> {
  return definers(await heartbeats(store), job);
}

/** Nodes whose heartbeat has not expired. */
export async function listNodes(store: Store): Promise<NodeInfo[]> {
  return (await heartbeats(store)).map(({ jobs: _jobs, beatMs: _beat, stopping: _stopping, ...n }) => ({
    ...n,
    startedAt: new Date(n.startedAt),
    lastSeen: new Date(n.lastSeen),
  }));
}

/** The latest history record of a job (newest fire time, highest attempt), if any. */
export async function lastRun(store: Store, job: string): Promise<HistoryEntry | undefined> {
  const [latest] = await store.scan(keys.historyPrefix(job), { reverse: true, limit: 1 });
  return latest ? decodeHistory(latest.value, latest.key) : undefined;
}

/**
 * Whether the store knows anything of `job`: a definition (job record), history, a control record
 * (pause, trigger request, queued run, run in flight) or a stored schedule. One read each, in
 * parallel; for an operator's "no such job" answer, not for a hot path.
 */
export async function jobKnown(store: Store, job: string): Promise<boolean> {
  const exists = (prefix: string) => store.scan(prefix, { limit: 1 }).then((r) => r.length > 0);
  const found = await Promise.all([
    store.get(keys.job(job)).then((v) => v !== null),
    store.get(keys.pause(job)).then((v) => v !== null),
    exists(keys.historyPrefix(job)),
    exists(keys.triggerRequestPrefix(job)),
    exists(keys.pendingPrefix(job)),
    exists(keys.inflightPrefix(job)),
    exists(keys.pageRecordPrefix(job)),
    exists(keys.scheduleOfJobPrefix(job)),
  ]);
  return found.includes(true);
}

/** A pause record (`PauseRecord` of control/job-control.ts) as `JobInfo.pause`. */
function pauseOf(value: string): NonNullable<JobInfo['pause']> {
  const r = JSON.parse(value) as { at: number; actor?: string; note?: string };
  return {
    since: new Date(r.at),
    ...(r.actor !== undefined && { actor: r.actor }),
    ...(r.note !== undefined && { note: r.note }),
  };
}

/**
 * Every job any node has defined (records outlive their nodes), with its trigger, pause state,
 * next fire times after the store's now, latest run, and the live nodes that define it now.
 */
export async function listJobs(store: Store, options: { nextCount?: number } = {}): Promise<JobInfo[]> {
  const count = options.nextCount ?? 5;
  const [records, pauses, nodes, now] = await Promise.all([
    store.scan(keys.jobPrefix, { limit: 10_000 }),
    store.scan(keys.pausePrefix, { limit: 10_000 }),
    heartbeats(store),
    store.now(),
  ]);
  const paused = new Map(pauses.map((r) => [jobOfKey(r.key), pauseOf(r.value)]));
  const jobs = records.map((r) => JSON.parse(r.value) as JobRecord);
  const last = await Promise.all(jobs.map((j) => lastRun(store, j.name)));
  return jobs.map((j, i) => {
    let next: Date[] = [];
    if (j.trigger && count > 0) {
      try {
        // startAt/endAt as recorded (schedule/bounds.ts): none before, none after.
        const trigger = bounded(compileTrigger(j.trigger), recordedBounds(j.options));
        next = nextFireTimes(trigger, now, count).map((t) => new Date(t));
      } catch {
        // A record written by another version with a trigger this one cannot read: no fire times.
      }
    }
    const lastEntry = last[i];
    return {
      name: j.name,
      trigger: j.trigger,
      options: j.options,
      paused: paused.has(j.name),
      ...(paused.get(j.name) && { pause: paused.get(j.name)! }),
      nextFireTimes: next,
      ...(lastEntry && { lastRun: lastEntry }),
      nodes: definers(nodes, j.name),
      updatedAt: new Date(j.updatedAt),
    };
  });
}

/**
 * What a lease key stands for: an occurrence claim (`occ|…`, also kept as a "done" hold after the
 * run), an overlap gate (`run|…`), a page of occurrences claimed together (`page|…`, held while
 * its runs go), a `tryLock`/`withLock` lock (`lock:…`), or something else.
 */
export type LeaseKind = 'occurrence' | 'gate' | 'page' | 'lock' | 'other';

export interface LeaseView extends Lease {
  kind: LeaseKind;
  /** The job of an occurrence claim, gate or page; the name of a lock. */
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
    if (l.key.startsWith('page|')) return { ...l, kind: 'page', name: jobOfKey(l.key) };
    if (l.key.startsWith(LOCK_KEY_PREFIX))
      return { ...l, kind: 'lock', name: l.key.slice(LOCK_KEY_PREFIX.length) };
    return { ...l, kind: 'other' };
  });
}
