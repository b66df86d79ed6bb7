/**
 * The history checker (src/testing/history-check.ts) on hand-made histories: each guarantee it
 * checks is broken once, and it must name the break; legal retries and recoveries pass.
 */
import { describe, expect, it } from 'vitest';
import {
  checkHistory,
  expectedOccurrences,
  type RunRecord,
  type SkipRecord,
  skipsFromHistory,
} from '../src/testing/index.js';

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
      // No node was healthy from T + 500 on: those fire times could be missed, and T + 3000 lost.
      healthy: [{ from: T, to: T + 500 }],
    });
    expect([covered.misses, covered.skipped, covered.violations.length]).toEqual([0, 2, 0]);
    const sharded = expectedOccurrences('j', { every: '2s' }, { from: T, to: T + 1000, shards: 3 });
    expect(sharded.map((e) => e.shard)).toEqual([0, 1, 2]);
  });

  it('bears out a misfire skip of a fire time that fell due while paused, never of one after the resume', () => {
    // Nodes healthy throughout; the job paused from T + 500 to T + 2500. T + 1000 and T + 2000 fell
    // due while paused (after the resume less than the threshold is left to claim them: a loaded
    // node that sees the resume late misses them); T + 3000 fell due after it and had its whole
    // threshold: skipping it is unjustified.
    const expected = expectedOccurrences('j', { every: '1s' }, { from: T + 1000, to: T + 3000 });
    const check = (from: number, to: number) =>
      checkHistory({
        records: [],
        jobs,
        expected,
        skips: [{ job: 'j', from, to, reason: 'misfire' }],
        pauses: [{ job: 'j', from: T + 500, to: T + 2500 }],
      });
    const inPause = check(T + 1000, T + 2000);
    expect(inPause.skipped).toBe(2);
    expect(inPause.violations.map((v) => v.kind)).toEqual(['lost-fire-time']); // T + 3000, no skip at all
    const after = check(T + 3000, T + 3000);
    expect(after.violations.map((v) => v.kind)).toContain('unjustified-skip');
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

describe('checkHistory: every skip is borne out by the history (unjustified-skip)', () => {
  /** A run of `j`'s own gate: fire time, start and finish (ms after T), node and token. */
  const run = (fire: number, startAt: number, endAt: number | undefined, token: number, extra = {}) => {
    const s: RunRecord = {
      node: `n${token}`,
      job: 'j',
      fireTime: T + fire,
      attempt: 1,
      token,
      source: 'schedule',
      event: 'start',
      at: T + startAt,
      ...extra,
    };
    return endAt === undefined ? [s] : [s, finish(s, 'succeeded', T + endAt)];
  };
  const skip = (fire: number, reason: SkipRecord['reason'], by?: number, token?: number): SkipRecord => ({
    job: 'j',
    from: T + fire,
    to: T + fire,
    reason,
    ...(by !== undefined && { by: { fireTime: T + by, ...(token !== undefined && { token }) } }),
  });
  const expected = (fire: number) => [{ job: 'j', fireTime: T + fire }];
  const kinds = (r: ReturnType<typeof checkHistory>) => r.violations.map((v) => v.kind);

  it('an overlap skip needs a run of its gate started by the fire time and going at it', () => {
    // The run of T − 1 s started at T − 950 and ran until T + 400: T was fairly skipped.
    const going = run(-1000, -950, 400, 1);
    const fair = checkHistory({
      records: going,
      jobs,
      expected: expected(0),
      skips: [skip(0, 'overlap', -1000, 1)],
    });
    expect([kinds(fair), fair.skipped, fair.unjustifiedSkips]).toEqual([[], 1, 0]);
    // Without naming it, any run of the gate that was going counts.
    expect(
      kinds(checkHistory({ records: going, jobs, expected: expected(0), skips: [skip(0, 'overlap')] })),
    ).toEqual([]);
    // A claim of T − 1 s granted, its reply lost, started only at T + 2.3 s: nothing ran at T.
    const late = run(-1000, 2300, 2450, 1);
    const unfair = checkHistory({
      records: late,
      jobs,
      expected: expected(0),
      skips: [skip(0, 'overlap', -1000, 1)],
    });
    expect([kinds(unfair), unfair.skipped, unfair.unjustifiedSkips]).toEqual([['unjustified-skip'], 0, 1]);
    expect(unfair.violations[0]!.message).toMatch(
      /never started; recorded skipped \(overlap by the run of 2025-12-31T23:59:59.000Z \(token 1\)\)/,
    );
    // Finished before T; no run at all; a run of another gate (a stored schedule's).
    for (const records of [run(-1000, -950, -400, 1), [], run(-1000, -950, 400, 1, { scheduleId: 'user-7' })])
      expect(
        kinds(checkHistory({ records, jobs, expected: expected(0), skips: [skip(0, 'overlap')] })),
      ).toEqual(['unjustified-skip']);
    // The named run must be the one: another token of that fire time does not stand in for it.
    expect(
      kinds(
        checkHistory({ records: going, jobs, expected: expected(0), skips: [skip(0, 'overlap', -1000, 9)] }),
      ),
    ).toEqual(['unjustified-skip']);
    // A manual trigger's run holds the job's own gate.
    const manual = run(-1000, -950, 400, 1, { scheduleId: 'manual:abc', source: 'manual' });
    expect(
      kinds(checkHistory({ records: manual, jobs, expected: expected(0), skips: [skip(0, 'overlap')] })),
    ).toEqual([]);
  });

  it('lockAtLeastFor: a fire time that soon after a run’s start may be skipped, not later', () => {
    const short = run(-1000, -950, -800, 1);
    const held = [{ job: 'j', leaseMs: 3000, lockAtLeastForMs: 2000 }];
    const at = (fire: number) =>
      kinds(
        checkHistory({
          records: short,
          jobs: held,
          expected: expected(fire),
          skips: [skip(fire, 'overlap')],
        }),
      );
    expect(at(0)).toEqual([]);
    expect(at(1000)).toEqual([]);
    expect(at(2000)).toEqual(['unjustified-skip']);
  });

  it('a superseded skip needs a later fire time of its gate that started', () => {
    const skips = [skip(0, 'superseded', 2000)];
    const window = [...expected(0), ...expected(2000)];
    expect(kinds(checkHistory({ records: run(2000, 2500, 2600, 5), jobs, expected: window, skips }))).toEqual(
      [],
    );
    expect(
      kinds(checkHistory({ records: run(-1000, -900, 3000, 5), jobs, expected: window, skips })),
    ).toEqual(['unjustified-skip', 'lost-fire-time']);
    // Named past the last expected fire time (maybe still queued when the history was read): not judged.
    expect(
      kinds(checkHistory({ records: run(-1000, -900, 3000, 5), jobs, expected: expected(0), skips })),
    ).toEqual([]);
  });

  it('a superseded skip needs the fire time it names to have started, or to be superseded in turn by one that did', () => {
    // T superseded by T + 2 s, which never started: nothing ran in its place, though T + 3 s did.
    const named = [skip(0, 'superseded', 2000)];
    const window = [...expected(0), ...expected(3000)];
    expect(
      kinds(checkHistory({ records: run(3000, 3500, 3600, 5), jobs, expected: window, skips: named })),
    ).toEqual(['unjustified-skip']);
    // T + 2 s superseded in turn by T + 3 s, which ran: the chain ends in a run.
    const chain = [skip(0, 'superseded', 2000), skip(2000, 'superseded', 3000)];
    expect(
      kinds(
        checkHistory({
          records: run(3000, 3500, 3600, 5),
          jobs,
          expected: [...expected(0), ...expected(2000), ...expected(3000)],
          skips: chain,
        }),
      ),
    ).toEqual([]);
    // T + 2 s skipped for overlap (the run of T + 1 s going at it): T coalesced into it.
    const overlapEnd = [skip(0, 'superseded', 2000), skip(2000, 'overlap', 1000)];
    expect(
      kinds(
        checkHistory({
          records: run(1000, 1500, 2600, 5),
          jobs,
          expected: [...expected(0), ...expected(2000)],
          skips: overlapEnd,
        }),
      ),
    ).toEqual([]);
    // A link that names an earlier fire time ends the chain without a run: unjustified.
    const loop = [
      skip(0, 'superseded', 2000),
      skip(2000, 'superseded', 1000),
      skip(1000, 'superseded', 2000),
    ];
    expect(
      kinds(checkHistory({ records: run(3000, 3500, 3600, 5), jobs, expected: window, skips: loop })),
    ).toEqual(['unjustified-skip']);
  });

  it('a paused span needs a pause of its job or stored schedule that its fire times fall in', () => {
    // One `paused` entry for T .. T + 3 s of stored schedule u-1 (four fire times), read from history.
    const entry = {
      job: 'j',
      scheduleId: 'u-1',
      fireTime: new Date(T),
      node: 'b',
      attempt: 1,
      token: 4,
      source: 'misfire' as const,
      status: 'skipped' as const,
      reason: 'paused' as const,
      span: { first: new Date(T), last: new Date(T + 3000), count: 4 },
      startedAt: new Date(T + 5000),
      finishedAt: new Date(T + 5000),
    };
    const skips = skipsFromHistory([entry]);
    expect(skips).toEqual([{ job: 'j', scheduleId: 'u-1', from: T, to: T + 3000, reason: 'paused' }]);
    const expected = expectedOccurrences('j', { every: '1s' }, { from: T, to: T + 3000, scheduleId: 'u-1' });
    const check = (pauses: { job: string; scheduleId?: string; from: number; to?: number }[] | undefined) =>
      checkHistory({ records: [], jobs, expected, skips, ...(pauses && { pauses }) });
    // The schedule's own pause, the job's pause, one not resumed yet: borne out.
    for (const pauses of [
      [{ job: 'j', scheduleId: 'u-1', from: T - 500, to: T + 3600 }],
      [{ job: 'j', from: T - 200, to: T + 3200 }],
      [{ job: 'j', scheduleId: 'u-1', from: T - 500 }],
    ]) {
      const r = check(pauses);
      expect([kinds(r), r.skipped]).toEqual([[], 4]);
    }
    // No pause given, a pause of another schedule, one that ended a minute before: unjustified.
    for (const pauses of [
      undefined,
      [{ job: 'j', scheduleId: 'u-2', from: T - 500, to: T + 3600 }],
      [{ job: 'j', scheduleId: 'u-1', from: T - 90_000, to: T - 60_000 }],
    ]) {
      const r = check(pauses);
      expect([r.unjustifiedSkips, r.violations[0]?.message]).toEqual([
        4,
        expect.stringMatching(/input\.pauses/),
      ]);
    }
  });

  it('flags a fire time that ran while a misfire skip on record says it was missed, unless a backfill ran it', () => {
    // No node healthy: the skip itself is borne out; the run contradicts it.
    const skips: SkipRecord[] = [{ job: 'j', from: T - 2000, to: T, reason: 'misfire' }];
    const healthy = [{ from: T + 5000, to: T + 9000 }];
    for (const source of ['schedule', 'misfire', 'recover', 'retry'] as const) {
      const r = checkHistory({ records: [start('a', 1, 1, T + 100, source)], jobs, skips, healthy });
      expect(kinds(r), source).toEqual(['ran-and-skipped']);
      expect(r.violations[0]!.message).toMatch(/misfire skip on record says it was missed/);
    }
    // A backfill runs a skipped fire time on purpose, and its recovery with it.
    const backfilled = [start('a', 1, 1, T + 5000, 'backfill'), start('b', 2, 2, T + 9000, 'recover')];
    expect(kinds(checkHistory({ records: backfilled, jobs, skips, healthy }))).toEqual([]);
    // Another shard's skip, or a span that ends before the fire time, says nothing of it.
    const other: SkipRecord[] = [
      { job: 'j', shard: 1, from: T, to: T, reason: 'misfire' },
      { job: 'j', from: T - 2000, to: T - 1, reason: 'misfire' },
    ];
    const run = { ...start('a', 1, 1, T + 100), shard: 0 };
    expect(kinds(checkHistory({ records: [run], jobs, skips: other, healthy }))).toEqual([]);
    expect(
      kinds(checkHistory({ records: [run], jobs, skips: [{ ...other[0]!, shard: 0 }], healthy })),
    ).toEqual(['ran-and-skipped']);
  });

  it('a misfire skip needs the fire time to fall outside every healthy window', () => {
    const skips = [skip(0, 'misfire')];
    const down = checkHistory({
      records: [],
      jobs,
      expected: expected(0),
      skips,
      healthy: [{ from: T + 5000, to: T + 9000 }],
    });
    expect([kinds(down), down.skipped]).toEqual([[], 1]);
    // A node was healthy from the fire time to its misfire threshold: it could have claimed it.
    const up = checkHistory({
      records: [],
      jobs,
      expected: expected(0),
      skips,
      healthy: [{ from: T - 1000, to: T + 9000 }],
    });
    expect(kinds(up)).toEqual(['unjustified-skip']);
    expect(up.violations[0]!.message).toMatch(/could be claimed in time/);
    // Without healthy windows every moment counts as healthy.
    expect(kinds(checkHistory({ records: [], jobs, expected: expected(0), skips }))).toEqual([
      'unjustified-skip',
    ]);
  });

  it('a fire time that ran is fine whatever else was recorded of it', () => {
    const r = checkHistory({
      records: run(0, 10, 200, 1),
      jobs,
      expected: expected(0),
      skips: [skip(0, 'overlap')],
    });
    expect(kinds(r)).toEqual([]);
  });

  it('a run ends at its earliest finish on record: a finish stored late is no overlap', () => {
    // Run a of T: its handler ended at T + 150 (its history's finishedAt), its node reported the
    // stored outcome at T + 4,300 (the finish batch took seconds; the gate's lease lapsed). Run b
    // of T + 4,000 started at T + 4,000: after a's end, so no overlap — unless only the late report
    // is on record.
    const overlapJobs = [{ job: 'j', leaseMs: 3000, overlap: 'skip' as const }];
    const a = start('a', 1, 1, T);
    const b: RunRecord = { ...start('b', 1, 2, T + 4000), fireTime: T + 4000 };
    const late = finish(a, 'succeeded', T + 4300);
    const early = finish(a, 'succeeded', T + 150);
    const check = (records: RunRecord[]) => kinds(checkHistory({ records, jobs: overlapJobs }));
    expect(check([a, late, b, finish(b, 'succeeded', T + 4200)])).toEqual(['overlap']);
    expect(check([a, late, early, b, finish(b, 'succeeded', T + 4200)])).toEqual([]);
  });

  it('skipsFromHistory reads skipped entries with their reason and the run they name', () => {
    const entry = {
      job: 'j',
      fireTime: new Date(T),
      node: 'b',
      attempt: 1,
      token: 4,
      source: 'schedule' as const,
      startedAt: new Date(T + 5),
      finishedAt: new Date(T + 5),
    };
    expect(
      skipsFromHistory([
        {
          ...entry,
          status: 'skipped',
          reason: 'overlap',
          by: { fireTime: new Date(T - 1000), node: 'a', token: 3 },
        },
        { ...entry, status: 'succeeded' },
        { ...entry, shard: 2, status: 'skipped', reason: 'superseded', by: { fireTime: new Date(T + 2000) } },
      ]),
    ).toEqual([
      { job: 'j', from: T, to: T, reason: 'overlap', by: { fireTime: T - 1000, node: 'a', token: 3 } },
      { job: 'j', shard: 2, from: T, to: T, reason: 'superseded', by: { fireTime: T + 2000 } },
    ]);
  });
});

describe('checkHistory: no overlap within a gate', () => {
  /** A run of `job` (stored schedule `scheduleId`) at fire time `fire` s, from `from` s to `to` s. */
  const run = (
    fire: number,
    from: number,
    to: number,
    o: { scheduleId?: string; token: number; source?: RunRecord['source']; lapsed?: boolean },
  ): RunRecord[] => {
    const s: RunRecord = {
      node: 'n1',
      job: 'j',
      ...(o.scheduleId !== undefined && { scheduleId: o.scheduleId }),
      fireTime: T + fire * 1000,
      attempt: 1,
      token: o.token,
      source: o.source ?? 'schedule',
      event: 'start',
      at: T + from * 1000,
    };
    return [
      s,
      {
        ...s,
        event: 'finish',
        status: 'succeeded',
        at: T + to * 1000,
        ...(o.lapsed && { leaseLapsed: true }),
      },
    ];
  };
  const overlaps = (records: RunRecord[], overlap?: 'skip' | 'queue' | 'replace' | 'allow') =>
    checkHistory({ records, jobs: [{ job: 'j', leaseMs: 3000, ...(overlap && { overlap }) }] })
      .violations.filter((v) => v.kind === 'overlap')
      .map((v) => v.occurrence);

  it('finds a backfill run beside an on-time run of its stored schedule, under every policy but allow', () => {
    const records = [
      ...run(2, 10, 12, { scheduleId: 'u1', token: 5, source: 'backfill' }),
      ...run(11, 11, 11.5, { scheduleId: 'u1', token: 6 }),
      // Another schedule's run at the same time shares no gate.
      ...run(11, 11, 11.5, { scheduleId: 'u2', token: 7 }),
    ];
    expect(overlaps(records, 'skip')).toEqual(['j · schedule u1 · 2026-01-01T00:00:11.000Z']);
    expect(overlaps(records, 'queue')).toEqual(['j · schedule u1 · 2026-01-01T00:00:11.000Z']);
    expect(overlaps(records, 'allow')).toEqual([]);
    // Facts without a policy: not judged.
    expect(overlaps(records)).toEqual([]);
  });

  it('a manual trigger shares the job’s gate; runs one after the other, or within the tolerance, pass', () => {
    expect(
      overlaps(
        [
          ...run(10, 10, 12, { token: 1 }),
          ...run(11, 11, 13, { scheduleId: 'manual:x', token: 2, source: 'manual' }),
        ],
        'skip',
      ),
    ).toHaveLength(1);
    expect(
      overlaps(
        [
          ...run(10, 10, 11.1, { token: 1 }),
          ...run(11, 11, 13, { token: 2 }),
          ...run(13, 13.2, 14, { token: 3 }),
        ],
        'skip',
      ),
    ).toEqual([]);
  });

  it('a run whose finish came after its lease lapsed was told to stop; under replace, a run past its lease was', () => {
    expect(
      overlaps([...run(10, 10, 15, { token: 1, lapsed: true }), ...run(12, 12, 13, { token: 2 })], 'skip'),
    ).toEqual([]);
    expect(
      overlaps([...run(10, 10, 15, { token: 1 }), ...run(12, 12, 13, { token: 2 })], 'replace'),
    ).toHaveLength(1);
    expect(
      overlaps([...run(10, 10, 15, { token: 1 }), ...run(13, 13.5, 14, { token: 2 })], 'replace'),
    ).toEqual([]);
  });
});
