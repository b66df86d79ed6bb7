/**
 * The `run` / `skip` lines fixture nodes print (test/fixtures/run-lines.ts), read back as the
 * history checker's records. No vitest import: bench/chaos uses it too.
 */
import type { RunRecord, SkipRecord } from '../../src/testing/index.js';

/** Run records and skips out of parsed fixture lines (other lines are ignored). */
export function runsFromLines(lines: readonly unknown[]): { records: RunRecord[]; skips: SkipRecord[] } {
  const records: RunRecord[] = [];
  const skips: SkipRecord[] = [];
  for (const raw of lines) {
    const line = (typeof raw === 'string' ? (raw.startsWith('{') ? JSON.parse(raw) : {}) : raw) as {
      event?: string;
      record?: RunRecord;
      skip?: SkipRecord;
    };
    if (line.event === 'run' && line.record) records.push(line.record);
    if (line.event === 'skip' && line.skip) skips.push(line.skip);
  }
  return { records, skips };
}
