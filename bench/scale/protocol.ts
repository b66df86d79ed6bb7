/**
 * What the orchestrator (main.ts) and its child processes say to each other over the IPC channel
 * of `child_process.fork`. A child is one system in one role: a seeder (writes schedules) or a
 * node (runs them). Node children report each handler start as `[scheduleId, fireTime | null,
 * startedAt]` (host wall-clock ms; everything runs on one host), batched.
 */
import type { BackendName } from '../servers.js';

export type Role = 'seed' | 'node';

export interface ChildConfig {
  role: Role;
  backend: BackendName;
  /** Store / database URL of this run (PostgreSQL: a database of its own). */
  url: string;
  /** Key prefix of this run (Redis: oncely's store prefix, BullMQ's prefix). */
  prefix: string;
  /** 1-based node number (nodes), 0 for the seeder. */
  node: number;
  /** oncely's `concurrency`, BullMQ's worker `concurrency`. */
  concurrency: number;
  /** Seeding stops starting new chunks at this wall-clock time. */
  seedDeadline: number;
  /**
   * oncely only (issue 32): `jitter` gives each stored schedule `jitter: '5m'`; `rate` gives the
   * job a fleet `rateLimit` of 100,000 a second (above what the fan-out reaches: its cost, not
   * its pace). Absent: plain.
   */
  variant?: 'jitter' | 'rate' | 'queue';
}

export type ToChild =
  | { t: 'init'; config: ChildConfig }
  /** Write schedules `from … from+count-1`: due ones firing at `at`, or others written at `at`. */
  | { t: 'seed'; kind: 'due' | 'other'; from: number; count: number; at: number }
  | { t: 'sample'; seq: number }
  | { t: 'stop' };

export interface ChildSample {
  /** Driver round trips since start (bench/counters.ts: pg queries, ioredis round trips). */
  roundTrips: number;
  /** oncely only: calls through the Store interface, and records they returned (scan + get). */
  storeCalls?: number;
  storeRowsRead?: number;
  /** Fallbacks for when /proc cannot be read: `process.cpuUsage()` µs, RSS and peak RSS bytes. */
  cpuUs: number;
  rssBytes: number;
  peakRssBytes: number;
}

export type FromChild =
  | { t: 'ready'; info?: string }
  | { t: 'progress'; done: number }
  /** A seed request ended: `done` written (fewer than asked when the deadline came first). */
  | { t: 'seeded'; done: number; ms: number; mode: string }
  | { t: 'starts'; rows: [string, number | null, number][] }
  | ({ t: 'sample'; seq: number } & ChildSample)
  | { t: 'error'; message: string }
  | { t: 'stopped' };
