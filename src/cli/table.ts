/**
 * Aligned plain-text tables for human output (`--json` prints data instead). Columns are padded
 * to their widest cell; the last column is not padded, so lines carry no trailing spaces. Cells
 * are made single-line (control characters shown as spaces), so a value cannot break the layout.
 */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const clean = (cell: string) => cell.replace(/\p{Cc}+/gu, ' ');
  const all = [headers.map(clean), ...rows.map((r) => r.map(clean))];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map((r) =>
      headers
        .map((_, i) => (i === headers.length - 1 ? (r[i] ?? '') : (r[i] ?? '').padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** `2024-05-01T10:00:00.000Z`, or `-` for none. */
export function isoOrDash(value: Date | number | undefined | null): string {
  if (value === undefined || value === null) return '-';
  return new Date(value).toISOString();
}

/** `850ms`, `12.3s`, `4m05s`, `2h03m`. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  const sign = ms < 0 ? '-' : '';
  if (abs < 1000) return `${sign}${Math.round(abs)}ms`;
  if (abs < 60_000) return `${sign}${(abs / 1000).toFixed(abs < 10_000 ? 2 : 1)}s`;
  if (abs < 3_600_000) {
    const s = Math.floor(abs / 1000);
    return `${sign}${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  }
  const m = Math.floor(abs / 60_000);
  return `${sign}${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** Shortens `text` to `max` characters with an ellipsis. */
export function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
