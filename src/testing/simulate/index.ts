export type { Violation, ViolationKind } from './checker.js';
export { type ExploreOptions, type ExploreResult, explore } from './explore.js';
export type { Invocation } from './history.js';
export type {
  FaultPlan,
  SimBackfill,
  SimCalendar,
  SimContext,
  SimFaults,
  SimJob,
  SimPause,
  SimSchedule,
  SimulateOptions,
} from './options.js';
export { MAX_SIM_SCHEDULES } from './options.js';
export { formatReport } from './report.js';
export { type SimulationResult, type SimulationStats, simulate } from './simulate.js';
