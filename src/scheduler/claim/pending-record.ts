import type { OccurrenceId } from '../keys.js';
import type { RunSource } from '../types.js';

/**
 * A pending record (keys.pending): a fire time queued or waiting behind its overlap gate. `at` is
 * its start (fire time plus jitter, Candidate.scheduledAt) when that differs from the fire time:
 * the run it becomes is told it (ctx.scheduledAt, history's scheduledAt) whichever node reads it.
 * A record written before `at` existed has none, and its run is told the fire time.
 */
export type PendingValue = OccurrenceId & { data?: unknown; source: RunSource; at?: number; wait?: true };
