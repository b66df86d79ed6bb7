import type { Scheduler, SchedulerEvents } from '../../src/index.js';

/** Every event of each kind a scheduler emitted, in order. */
export type RecordedEvents = { [K in keyof SchedulerEvents]: SchedulerEvents[K][] };

/** Records every event `s` emits from now on (tests await these instead of sleeping). */
export function recordEvents(s: Scheduler): RecordedEvents {
  const events: RecordedEvents = {
    started: [],
    succeeded: [],
    failed: [],
    skipped: [],
    misfired: [],
    error: [],
  };
  for (const k of Object.keys(events) as (keyof SchedulerEvents)[])
    s.on(k, (p) => (events[k] as unknown[]).push(p));
  return events;
}
