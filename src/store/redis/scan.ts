import type { StoredRecord } from '../types.js';
import { compareKeys, type NormalizedScan, prefixUpperBound } from '../validate.js';
import type { RunScript } from './count.js';
import { SCRIPTS } from './scripts.js';

/** Dead index entries (expired, unswept records) one scan script walks past at most (scan.lua.ts). */
export const SCAN_DEAD_WALK = 1_000;

/**
 * RedisStore.doScan: a page of live records in calls of the scan script. Each call walks at most
 * `limit` + SCAN_DEAD_WALK index entries (./scan.lua.ts): a stretch of expired, unswept records is
 * crossed in several calls, other clients served in between.
 */
export async function scanRecords(run: RunScript, scan: NormalizedScan): Promise<StoredRecord[]> {
  const { prefix, after, reverse } = scan;
  const upper = prefixUpperBound(prefix);
  let low = prefix === '' ? '-' : `[${prefix}`;
  let high = upper === undefined ? '+' : `(${upper}`;
  // The cursor narrows one end of the range; a cursor outside the range empties it (low > high).
  if (after !== undefined) {
    if (!reverse && compareKeys(after, prefix) >= 0) low = `(${after}`;
    if (reverse && (upper === undefined || compareKeys(after, upper) < 0)) high = `(${after}`;
  }
  const records: StoredRecord[] = [];
  for (;;) {
    const reply = (await run(SCRIPTS.scan, [
      low,
      high,
      scan.limit - records.length,
      reverse ? 1 : 0,
      SCAN_DEAD_WALK,
    ])) as (string | number)[];
    const whole = reply.length - (reply.length % 3);
    for (let i = 0; i < whole; i += 3) {
      const expiresAt = reply[i + 2] as number;
      records.push({
        key: reply[i] as string,
        value: reply[i + 1] as string,
        expiresAt: expiresAt < 0 ? null : expiresAt,
      });
    }
    if (whole === reply.length) return records;
    // The budget ran out: on from the last key walked (exclusive).
    const last = reply[whole] as string;
    if (reverse) high = `(${last}`;
    else low = `(${last}`;
  }
}
