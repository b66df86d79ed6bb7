export type { ListSchedulesOptions, Schedules } from './control/schedules.js';
export { type JobOptions, MAX_JOB_NAME_LENGTH } from './job-options.js';
export { type HistoryBefore, type HistoryQuery, historyCursor } from './observe/history-query.js';
export { createScheduler, Scheduler } from './scheduler.js';
export type {
  HistoryEntry,
  JobContext,
  JobHandler,
  JobInfo,
  NodeInfo,
  RunEvent,
  RunSource,
  RunStatus,
  SchedulerEvents,
  SchedulerOptions,
  SchedulerTracer,
  SkipCause,
  SkipReason,
  StoredSchedule,
} from './types.js';
