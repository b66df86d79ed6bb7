import type { OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';

/**
 * The `misfired` event for missed fire times `first`..`last` of a job trigger or stored schedule:
 * skipped (`count` of them, when known) or replayed (`last`, once).
 */
export function emitMisfired(
  state: NodeState,
  of: { job: string; scheduleId?: string | undefined },
  action: 'skipped' | 'run',
  first: number,
  last: number,
  count: number | undefined,
): void {
  state.emit('misfired', {
    job: of.job,
    ...(of.scheduleId !== undefined && { scheduleId: of.scheduleId }),
    fireTime: new Date(last),
    action,
    firstFireTime: new Date(first),
    ...(count !== undefined && { count }),
  });
}

/**
 * The `skipped` event (reason `paused`) of missed fire times `occ.fireTime`..`last` that a pause
 * left (control/pause-span.ts): the same span as its history entry.
 */
export function emitPausedSpan(
  state: NodeState,
  occ: OccurrenceId,
  span: { last: number; count: number | undefined },
): void {
  state.emit('skipped', {
    job: occ.job,
    ...(occ.scheduleId !== undefined && { scheduleId: occ.scheduleId }),
    fireTime: new Date(occ.fireTime),
    ...(occ.shard !== undefined && { shard: occ.shard }),
    reason: 'paused',
    span: {
      first: new Date(occ.fireTime),
      last: new Date(span.last),
      ...(span.count !== undefined && { count: span.count }),
    },
  });
}
