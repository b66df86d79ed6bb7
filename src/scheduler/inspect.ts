import { nextFireTimes } from '../schedule/fire-times.js';
import { compileTrigger, type Trigger } from '../schedule/trigger.js';
import type { Store } from '../store/types.js';
import { decodeHistory } from './history.js';
import { jobOfKey, keys } from './keys.js';
import type { HistoryEntry, JobInfo, NodeInfo } from './types.js';

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

/** What `define` records per job (see Scheduler.registerJob). */
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
  return latest ? decodeHistory(latest.value) : undefined;
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
  const paused = new Set(pauses.map((r) => jobOfKey(r.key)));
  const jobs = records.map((r) => JSON.parse(r.value) as JobRecord);
  const last = await Promise.all(jobs.map((j) => lastRun(store, j.name)));
  return jobs.map((j, i) => {
    let next: Date[] = [];
    if (j.trigger && count > 0) {
      try {
        next = nextFireTimes(compileTrigger(j.trigger), now, count).map((t) => new Date(t));
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
      nextFireTimes: next,
      ...(lastEntry && { lastRun: lastEntry }),
      nodes: nodes.filter((n) => n.jobs?.includes(j.name)).map((n) => n.id),
      updatedAt: new Date(j.updatedAt),
    };
  });
}
