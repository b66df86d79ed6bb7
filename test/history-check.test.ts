/**
 * The history checker (src/testing/history-check.ts) on hand-made histories: each guarantee it
 * checks is broken once, and it must name the break; legal retries and recoveries pass.
 */
import { describe, expect, it } from 'vitest';
import { checkHistory, expectedOccurrences, type RunRecord } from '../src/testing/index.js';

const T = Date.UTC(2026, 0, 1);
const jobs = [{ job: 'j', leaseMs: 3000 }];
const start = (
  node: string,
  attempt: number,
  token: number,
  at: number,
  source: RunRecord['source'] = 'schedule',
): RunRecord => ({
  node,
  job: 'j',
  fireTime: T,
  attempt,
  token,
  source,
  event: 'start',
  at,
});
const finish = (s: RunRecord, status: NonNullable<RunRecord['status']>, at: number): RunRecord => ({
  ...s,
  event: 'finish',
  status,
  at,
});

describe('checkHistory', () => {
  it('passes one run, a retry after a failure, and a recovery after the lease', () => {
    const a = start('a', 1, 1, T);
    const retry = start('a', 2, 2, T + 500, 'retry');
    const recovered = start('b', 3, 3, T + 500 + 3000, 'recover');
    const r = checkHistory({
      records: [a, finish(a, 'failed', T + 100), retry, recovered, finish(recovered, 'succeeded', T + 4000)],
      jobs,
      expected: [{ job: 'j', fireTime: T }],
    });
    expect(r.violations).toEqual([]);
    expect([r.occurrences, r.retries, r.recoveries, r.misses]).toEqual([1, 1, 1, 0]);
  });

  it('classes duplicates: concurrent, after success, recovery before the lease could expire', () => {
    const a = start('a', 1, 1, T);
    const cases: [RunRecord[], string][] = [
      [[a, start('b', 1, 2, T + 10)], 'concurrent'],
      [[a, finish(a, 'succeeded', T + 50), start('b', 1, 2, T + 100)], 'sequential-after-success'],
      [[a, start('b', 2, 2, T + 1000, 'recover')], 'recovery-without-expiry'],
      [[a, finish(a, 'failed', T + 50), start('b', 1, 2, T + 100)], 'sequential-after-finish'],
    ];
    for (const [records, kind] of cases) {
      const r = checkHistory({ records, jobs });
      expect(
        r.violations.map((v) => (v.kind === 'duplicate' ? v.duplicate : v.kind)),
        kind,
      ).toEqual([kind]);
      expect(r.violations[0]!.message).toContain('2026-01-01T00:00:00.000Z');
    }
  });

  it('passes a recovery after a success stored only once its lease had lapsed, and only then', () => {
    const a = start('a', 1, 1, T);
    const recovered = start('b', 2, 2, T + 3000, 'recover');
    // The handler ended at T + 50; its outcome reached the store after the lease (chaos soak).
    const success = finish(a, 'succeeded', T + 50);
    const lapsed = { ...success, leaseLapsed: true };
    const kinds = (records: RunRecord[]) =>
      checkHistory({ records, jobs }).violations.map((v) => (v.kind === 'duplicate' ? v.duplicate : v.kind));
    expect(kinds([a, success, recovered])).toEqual(['recovery-without-expiry']);
    expect(kinds([a, lapsed, recovered])).toEqual([]);
    // Reported twice (the node's event without the mark, the store's history with it): lapsed.
    expect(kinds([a, success, lapsed, recovered])).toEqual([]);
    expect(kinds([a, lapsed, success, recovered])).toEqual([]);
    // A lapsed success does not excuse a recovery before the lease could have expired, nor a fresh run.
    expect(kinds([a, lapsed, start('b', 2, 2, T + 1000, 'recover')])).toEqual(['recovery-without-expiry']);
    expect(kinds([a, lapsed, start('b', 1, 2, T + 3000)])).toEqual(['sequential-after-success']);
  });

  it('flags a start whose token is not above an earlier start of the same occurrence', () => {
    const r = checkHistory({ records: [start('a', 1, 5, T), start('b', 2, 4, T + 4000, 'recover')], jobs });
    expect(r.violations.map((v) => v.kind)).toContain('stale-token');
  });

  it('flags a lost fire time unless skipped on record or outside a healthy window', () => {
    const expected = expectedOccurrences('j', { every: '1s' }, { from: T, to: T + 3000 });
    expect(expected.map((e) => e.fireTime - T)).toEqual([0, 1000, 2000, 3000]);
    const records = [start('a', 1, 1, T)];
    const lost = checkHistory({ records, jobs, expected });
    expect(lost.misses).toBe(3);
    const covered = checkHistory({
      records,
      jobs,
      expected,
      skips: [{ job: 'j', from: T + 1000, to: T + 2000, reason: 'misfire' }],
      healthy: [{ from: T, to: T + 2500 }],
    });
    expect([covered.misses, covered.skipped, covered.violations.length]).toEqual([0, 2, 0]);
    const sharded = expectedOccurrences('j', { every: '2s' }, { from: T, to: T + 1000, shards: 3 });
    expect(sharded.map((e) => e.shard)).toEqual([0, 1, 2]);
  });

  it('counts refused stale writes and flags an accepted one', () => {
    const ok = checkHistory({
      records: [],
      jobs,
      writes: [
        { resource: 'x', token: 1, accepted: true },
        { resource: 'x', token: 3, accepted: true },
        { resource: 'x', token: 2, accepted: false },
      ],
    });
    expect([ok.writesAccepted, ok.staleWritesRefused, ok.violations.length]).toEqual([2, 1, 0]);
    const bad = checkHistory({
      records: [],
      jobs,
      writes: [
        { resource: 'x', token: 3, accepted: true },
        { resource: 'x', token: 2, accepted: true },
      ],
    });
    expect(bad.violations.map((v) => v.kind)).toEqual(['stale-write-accepted']);
  });
});
