/**
 * A job's options as its user wrote them: the names `define()` and jobs.yaml take, durations as
 * `30s` or `5m` — not the record's `lockAtMostForMs=30000`.
 */

/** `ms` as a duration string oncely parses back: the largest unit that divides it (`90s`, `2h`, `250ms`). */
export function durationText(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (ms === 0) return '0s';
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/**
 * `overlap: skip · lockAtMostFor: 30s · …` from a job record's options (unset ones left out).
 *
 * @example
 * optionsText({ lockAtMostForMs: 30000, overlap: 'skip', timeoutMs: null }); // 'overlap: skip · lockAtMostFor: 30s'
 */
export function optionsText(options: Record<string, unknown>): string {
  return Object.entries(options)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([key, v]) => {
      if (key.endsWith('Ms') && typeof v === 'number') return `${key.slice(0, -2)}: ${durationText(v)}`;
      return `${key}: ${typeof v === 'string' ? v : JSON.stringify(v)}`;
    })
    .join(' · ');
}
