import type { AuditEntry } from '../types.js';

/** An audit entry's change in one line, for the CLI's table and the dashboard's audit page. */

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A snapshot value in one short line. */
function short(value: unknown): string {
  return clip(value === undefined ? '-' : JSON.stringify(value), 40);
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** `path: before → after` for each field that differs; into objects (a job's `options`), not into `data`. */
function diffs(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: string,
  out: string[],
): void {
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const [b, a] = [before[key], after[key]];
    if (JSON.stringify(b) === JSON.stringify(a)) continue;
    if (isObject(b) && isObject(a) && key !== 'data') diffs(b, a, `${path}${key}.`, out);
    else out.push(`${path}${key}: ${short(b)} → ${short(a)}`);
  }
}

/**
 * What changed, in one line: the note, then the top-level fields whose value differs (`every: "1m"
 * → "2m"`), or `new` / `removed`, or a trigger's data, or a backfill's range and what it queued.
 */
export function changeText(e: AuditEntry): string {
  const parts: string[] = [];
  if (e.note !== undefined) parts.push(`note: ${e.note}`);
  const before = e.before as Record<string, unknown> | undefined;
  const after = e.after as Record<string, unknown> | undefined;
  if (e.action === 'trigger') {
    if (after?.['data'] !== undefined) parts.push(`data: ${short(after['data'])}`);
  } else if (e.action === 'backfill' && after !== undefined) {
    parts.push(`${String(after['from'])} to ${String(after['to'])}: queued ${String(after['queued'])}`);
  } else if (before === undefined && after !== undefined) parts.push('new');
  else if (after === undefined && before !== undefined) parts.push('removed');
  else if (before && after && e.action !== 'pause' && e.action !== 'resume') {
    diffs(before, after, '', parts);
  }
  return clip(parts.join('; '), 120);
}
