import type { SkipCause, SkipReason, SkipSpan } from '../types.js';

/**
 * A skip's reason as a reader wants it, for logs, `oncely history` and the dashboard: what it
 * overlapped, or what superseded it. An entry written before skips carried a reason says so.
 */
export function skipText(e: {
  reason?: SkipReason | undefined;
  by?: SkipCause | undefined;
  span?: SkipSpan | undefined;
}): string {
  if (e.reason === 'paused') return pausedText(e.span);
  if (e.reason === 'excluded') return "excluded: the fire time matches the schedule's exclude list";
  if (e.reason === 'removed')
    return e.span === undefined
      ? 'removed: its schedule was removed or changed after the fire time was claimed, before it started'
      : `removed: ${spanText(e.span)} due and never run before its schedule was removed or changed`;
  if (e.reason === undefined || e.by === undefined)
    return 'skipped (no reason recorded: written by an older oncely)';
  const at = e.by.fireTime.toISOString();
  if (e.reason === 'superseded') return `superseded by the queued run of ${at}`;
  const who = [
    e.by.node !== undefined && `on ${e.by.node}`,
    e.by.token !== undefined && `token ${e.by.token}`,
  ]
    .filter(Boolean)
    .join(', ');
  return `overlap: the run of ${at}${who === '' ? '' : ` (${who})`} was still going`;
}

/**
 * A `paused` span as one line: `paused: 14 fire times 2026-12-02T09:00:00.000Z–09:13:00.000Z` (the
 * last one's date left out when it is the first's day).
 */
export function pausedText(span: SkipSpan | undefined): string {
  return span === undefined ? 'paused' : `paused: ${spanText(span)}`;
}

/** The fire times of a span: `14 fire times 2026-12-02T09:00:00.000Z–09:13:00.000Z` (see {@link pausedText}). */
function spanText(span: SkipSpan): string {
  const first = span.first.toISOString();
  const last = span.last.toISOString();
  const end = last.slice(0, 11) === first.slice(0, 11) ? last.slice(11) : last;
  const count =
    span.count === undefined
      ? 'over 1,000 fire times'
      : `${span.count} fire time${span.count === 1 ? '' : 's'}`;
  return span.count === 1 ? `${count} ${first}` : `${count} ${first}–${end}`;
}
