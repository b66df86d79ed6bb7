/**
 * The demo's jobs and timings: defined identically by every node process (node-process.ts) and
 * used by the parent for the summary's expectation maths (summary.ts), so "what should have run"
 * is computed from the very definitions the nodes ran.
 */
import type { JobOptions } from '../../scheduler/job-options.js';

/** How often each node reads control state (recovery included): short, so a recovery shows quickly. */
export const POLL_INTERVAL_MS = 300;
/**
 * Lease length of every run (renewed every 1.5 s while it runs). A killed node's claim is free
 * again at most this long after its last renewal, and then recovered by the next poll.
 */
export const LOCK_AT_MOST_FOR_MS = 3_000;
/**
 * An occurrence first claimed later than this after its fire time counts as missed. Generous on
 * purpose: the demo must stay exact on a busy laptop or CI runner where a timer can be late.
 */
export const MISFIRE_THRESHOLD_MS = 3_000;
/** `stop()` lets running handlers finish for this long: longer than the slowest job. */
export const STOP_TIMEOUT_MS = 10_000;

/**
 * The end of the demo: the nodes are stopped this long before its announced duration is up, so
 * the running jobs (the slowest takes 4.5 s) finish and the nodes exit in time.
 */
export const WIND_DOWN_MS = 5_500;

export interface DemoJob {
  name: string;
  everyMs: number;
  /** How long the handler works (it honours `ctx.signal`). */
  workMs: number;
  shards?: number;
  overlap: 'skip' | 'queue' | 'allow';
  /** One line for the demo's header. */
  blurb: string;
}

export const DEMO_JOBS: readonly DemoJob[] = [
  { name: 'heartbeat', everyMs: 2_000, workMs: 150, overlap: 'skip', blurb: 'every 2s, fast' },
  {
    name: 'shards',
    everyMs: 5_000,
    workMs: 600,
    shards: 3,
    overlap: 'skip',
    blurb: 'every 5s in 3 shards (each shard is its own occurrence)',
  },
  {
    name: 'slow-report',
    everyMs: 3_000,
    workMs: 4_500,
    overlap: 'skip',
    blurb: 'every 3s but takes 4.5s: overlapping fire times are skipped fleet-wide',
  },
];

/** The job whose runner the demo kills: its runs are long, so a kill lands mid-run. */
export const KILL_TARGET_JOB = 'slow-report';

export function demoJob(name: string): DemoJob | undefined {
  return DEMO_JOBS.find((j) => j.name === name);
}

/** The options every node passes to `scheduler.define` for a demo job. */
export function jobOptions(job: DemoJob): JobOptions {
  return {
    every: job.everyMs,
    overlap: job.overlap,
    misfireThreshold: MISFIRE_THRESHOLD_MS,
    lockAtMostFor: LOCK_AT_MOST_FOR_MS,
    ...(job.shards !== undefined && { shards: job.shards }),
  };
}
