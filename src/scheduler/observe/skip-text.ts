import type { SkipCause, SkipReason } from '../types.js';

/**
 * A skip's reason as a reader wants it, for logs, `oncely history` and the dashboard: what it
 * overlapped, or what superseded it. An entry written before skips carried a reason says so.
 */
export function skipText(e: { reason?: SkipReason | undefined; by?: SkipCause | undefined }): string {
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
