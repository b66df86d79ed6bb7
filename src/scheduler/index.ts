export { MAX_ACTOR_LENGTH, MAX_NOTE_LENGTH, MAX_SNAPSHOT_DATA_BYTES } from './control/audit.js';
export { type BackfillOptions, type BackfillResult, MAX_BACKFILL_OCCURRENCES } from './control/backfill.js';
export {
  type Calendar,
  type CalendarChangeOptions,
  type Calendars,
  MAX_CALENDAR_DATES,
} from './control/calendars.js';
export type { PauseOptions, TriggerOptions } from './control/job-control.js';
export type { ListSchedulesOptions, ScheduleChangeOptions, Schedules } from './control/schedules.js';
export { type JobOptions, MAX_JOB_NAME_LENGTH } from './job-options.js';
export { type HistoryBefore, type HistoryQuery, historyCursor } from './observe/history-query.js';
export { MAX_NEXT_COUNT, type NextOptions } from './observe/next-runs.js';
export { createScheduler, Scheduler } from './scheduler.js';
export type {
  AuditAction,
  AuditEntry,
  AuditQuery,
  HistoryEntry,
  JobContext,
  JobHandler,
  JobInfo,
  NodeInfo,
  RunEvent,
  RunSource,
  RunStatus,
  SchedulePauseInfo,
  SchedulerEvents,
  SchedulerOptions,
  SchedulerTracer,
  SkipCause,
  SkipReason,
  SkipSpan,
  StoredSchedule,
} from './types.js';
