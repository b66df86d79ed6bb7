/** Small statistics and formatting helpers for the benchmarks. */

/** The q-quantile (0..1) of `samples`, nearest-rank on a sorted copy; NaN when empty. */
export function quantile(samples: ArrayLike<number>, q: number): number {
  const n = samples.length;
  if (n === 0) return Number.NaN;
  const sorted = Float64Array.from(samples).sort();
  const rank = Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1));
  return sorted[rank] ?? Number.NaN;
}

/** Median of a few numbers (the middle one, or the mean of the two middle ones). */
export function median(values: readonly number[]): number {
  const finite = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (finite.length === 0) return Number.NaN;
  const mid = Math.floor(finite.length / 2);
  return finite.length % 2 === 1 ? finite[mid]! : (finite[mid - 1]! + finite[mid]!) / 2;
}

/** Milliseconds with a precision that suits the magnitude: 0.0021, 0.118, 1.42, 12.3. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  if (ms < 0.01) return ms.toFixed(4);
  if (ms < 1) return ms.toFixed(3);
  if (ms < 10) return ms.toFixed(2);
  return ms.toFixed(1);
}

/** Operations per second, rounded to three significant digits, with thousands separators. */
export function formatRate(opsPerSec: number): string {
  if (!Number.isFinite(opsPerSec)) return '—';
  const digits = Math.max(0, Math.floor(Math.log10(Math.max(1, opsPerSec))) - 2);
  const rounded = Math.round(opsPerSec / 10 ** digits) * 10 ** digits;
  return rounded.toLocaleString('en-US');
}

export function formatRatio(ratio: number): string {
  return Number.isFinite(ratio) ? ratio.toFixed(2) : '—';
}

export function formatBytes(bytes: number): string {
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}
