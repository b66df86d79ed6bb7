/**
 * Why a fire time was not run, and what a skip names (history entries and the `skipped` event):
 * re-exported by types.ts with the scheduler's other public types.
 */

/**
 * Why a fire time was skipped. `overlap`: a run of the same overlap gate had started before the
 * fire time and had not finished by then (`by` names it); `superseded`: a queued run (overlap
 * 'queue', one run buffered per gate) that a later queued fire time (`by.fireTime`) replaced;
 * `misfire`: nobody could claim it within `misfireThreshold` (the `misfired` event; no history
 * entry); `excluded`: the fire time matches the trigger's `exclude` list (a cron, a range, a
 * calendar: docs/calendars.md; no `by`); `paused`: fire times that passed while the job or the
 * stored schedule was paused and that its misfire policy did not replay — ONE entry per pause, its
 * `span` saying which (docs/pause.md; no `by`); `removed`: its stored schedule was removed, or
 * replaced by an upsert that changed it, after the fire time was claimed and before its run
 * started — the claim's node died or lost the claim's answer, and the node that took its page
 * over found the schedule gone (no `by`); or its fire times that fell due while it was in the
 * store and never ran — held back behind such a claim or a recovery, or with no node up — one
 * `removed` entry, a `span` when more than one. Any other claim that was granted and never
 * started never causes a skip: it is recovered.
 */
export type SkipReason = 'overlap' | 'superseded' | 'misfire' | 'excluded' | 'paused' | 'removed';

/**
 * The fire times one `paused` skip stands for (HistoryEntry.span): every fire time of the trigger
 * from `first` to `last`, inclusive — those that passed while paused and were not replayed by the
 * misfire policy at the resume; or those of a `removed` skip: due while the stored schedule was
 * in the store, never run, until it was removed or changed. The entry's `fireTime` is `first`.
 */
export interface SkipSpan {
  /** The first fire time not run. */
  first: Date;
  /** The last fire time not run. */
  last: Date;
  /** How many fire times `first`..`last` are; absent only for a cron span too long to count cheaply (over 1,000). */
  count?: number;
}

/** The run a skip was decided against: the overlapping run, or the queued fire time that superseded it. */
export interface SkipCause {
  /** The overlapping run's fire time, or the fire time of the queued run that superseded this one. */
  fireTime: Date;
  /** The overlapping run's node and fencing token (`overlap`; absent for `superseded`). */
  node?: string;
  /** See `node`. */
  token?: number;
}
