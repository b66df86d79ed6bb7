/**
 * The audit trail's public types (`scheduler.audit()`; written by control/audit.ts, read by
 * observe/audit-query.ts), re-exported by types.ts with the scheduler's other public types.
 */
/**
 * What an audit trail entry records. `define`: a node recorded a job definition whose trigger or
 * options differ from what the store had (or a job new to the store). The others are named after
 * the call that made the change (`calendars.*`: `target` is the calendar's id, no `job`;
 * `backfill`: `after` is `{ from, to, queued }`, `target` the stored schedule's id when one is
 * given). Reserved for calls that do not exist yet (never written now): `schedules.pause`,
 * `schedules.resume`.
 */
export type AuditAction =
  | 'define'
  | 'schedules.upsert'
  | 'schedules.remove'
  | 'pause'
  | 'resume'
  | 'trigger'
  | 'schedules.pause'
  | 'schedules.resume'
  | 'backfill'
  | 'calendars.upsert'
  | 'calendars.remove';

/**
 * One change, as `scheduler.audit()` returns it. `before`/`after` are JSON snapshots of what
 * changed (a job's recorded definition, a stored schedule, a pause), capped in size: a snapshot's
 * `data` larger than 1 KiB as JSON is stored as `{ "truncated": true, "bytes": n }`.
 *
 * @example
 * // { id: '001767225600000-…', at: 2026-01-01T00:00:00.000Z, actor: 'alice', action: 'pause',
 * //   target: 'send-report', job: 'send-report', before: { paused: false }, after: { paused: true, … }, note: 'mail provider down' }
 */
export interface AuditEntry {
  /** Its id, also the paging cursor: `audit({ after: entry.id })` returns the entries older than it. */
  id: string;
  /** When the change was made, on the store's clock. */
  at: Date;
  /** Who made it: the call's `{ actor }`, else `createScheduler({ actor })`, else the node id. */
  actor: string;
  /** What was done. */
  action: AuditAction;
  /** What it was done to: the stored schedule's id for `schedules.*` (and a `backfill` of one), else the job's name. */
  target: string;
  /** The job concerned (absent only for calendar changes). */
  job?: string;
  /** The stored schedule concerned, for `schedules.*` actions (and a `backfill` of one). */
  scheduleId?: string;
  /** The state before the change (absent for something new, and for `trigger`). */
  before?: unknown;
  /** The state after it (absent for a removal). */
  after?: unknown;
  /** The note given with the call (`pause(job, { note })`). */
  note?: string;
}

/** What `scheduler.audit(query)` accepts; every field is optional. */
export interface AuditQuery {
  /** Only entries of this job (its definition, pauses, triggers and stored schedules). */
  job?: string;
  /** Only entries of this stored schedule. */
  scheduleId?: string;
  /** Cursor: only entries older than the entry with this id (pass the last id of the previous page). */
  after?: string;
  /** At most this many entries (default 100, at most 1,000). */
  limit?: number;
}
