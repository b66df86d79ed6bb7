/**
 * Pauses and backfills in the deterministic simulator (oncely/testing, issue 32 item 10): a job's
 * `pauses` (scheduler.pause / resume, schedules.pause / resume) and `backfills`
 * (scheduler.backfill) are called through the real API on the store server at their virtual
 * time. Without faults a paused job and a paused stored schedule run nothing while paused, are on
 * record as one `paused` span each, and run again after; a backfill runs each fire time of its
 * range that had not run, once, and none that had. Under the usual fault mix the checker finds
 * nothing wrong; and it does find a `paused` skip no pause bears out, a backfill whose runs never
 * come, and a backfill of a fire time that had run.
 */
import { describe, expect, it } from 'vitest';
import { OncelyError } from '../src/core/errors.js';
import { encodeHistory } from '../src/scheduler/finish/history.js';
import { keys } from '../src/scheduler/keys.js';
import { MemoryStore } from '../src/store/memory.js';
import type { LeaseRequest, PageClaim, PageOp, WriteOp } from '../src/store/types.js';
import { formatReport, type SimJob, type SimulateOptions, simulate } from '../src/testing/index.js';
import { type CheckedJob, check } from '../src/testing/simulate/checker.js';
import { History } from '../src/testing/simulate/history.js';
import { EPOCH } from '../src/testing/simulate/sim-store.js';
import { SIM_FAULTS } from './fixtures/sim-faults.js';
import { PAUSE_BACKFILL_MIX } from './fixtures/sim-pause-backfill-mix.js';

/** Store ms of virtual second `s`. */
const sec = (s: number) => EPOCH + s * 1_000;

/** The runs in a trace: node, occurrence, attempt, source, and when it started (virtual s). */
function starts(trace: readonly string[]) {
  return trace.flatMap((l) => {
    const m = /^\s*([\d.]+)s\s+(\S+)\s+start\s+(\S+) attempt=(\d+) token=\d+ source=(\S+)/.exec(l);
    return m ? [{ at: Number(m[1]), node: m[2]!, occ: m[3]!, attempt: Number(m[4]), source: m[5]! }] : [];
  });
}

/** The virtual second of an occurrence's fire time (`tick@+7.000s` → 7). */
const fireOf = (occ: string) => Number(/@\+(-?[\d.]+)s/.exec(occ)?.[1]);

/** The `paused` spans on record: occurrence stream, first and last fire time (virtual s). */
function pausedSpans(trace: readonly string[]) {
  return trace.flatMap((l) => {
    const m = /stored\s+(\S+)@\+(-?[\d.]+)s skipped \(paused last=\+(-?[\d.]+)s\)/.exec(l);
    return m ? [{ stream: m[1]!, first: Number(m[2]), last: Number(m[3]) }] : [];
  });
}

describe('simulate: pauses', () => {
  const jobs: SimJob[] = [
    {
      name: 'tick',
      options: { every: '1s', lockAtMostFor: '3s', misfire: 'skip' },
      runMs: [20, 200],
      pauses: [{ at: 6_000, resumeAt: 11_500, note: 'mail provider down' }],
    },
    {
      name: 'report',
      options: { lockAtMostFor: '3s', misfire: 'skip' },
      runMs: [20, 200],
      schedules: [
        { id: 'u1', every: '1s' },
        { id: 'u2', every: '1s' },
      ],
      pauses: [{ scheduleId: 'u1', at: 5_000, resumeAt: 10_000 }],
    },
  ];

  it('without faults: nothing runs while paused, one paused span each is on record, runs resume after', async () => {
    for (const seed of [1, 2]) {
      const options: SimulateOptions = { seed, nodes: 3, durationMs: 20_000, jobs };
      const result = await simulate(options);
      if (!result.ok) expect.fail(formatReport(options, result));
      const runs = starts(result.trace);
      // In force on every node within a poll (1 s): no run starts later than that while paused.
      const during = (stream: string, from: number, to: number) =>
        runs.filter((r) => r.occ.startsWith(`${stream}@`) && r.at >= from + 1 && r.at < to);
      expect(during('tick', 6, 11.5)).toEqual([]);
      expect(during('report/u1', 5, 10)).toEqual([]);
      // The other schedule goes on.
      expect(during('report/u2', 5, 10).length).toBeGreaterThanOrEqual(4);
      // Each pause is one paused span on record, inside the pause (misfire skip: nothing replayed).
      const spans = pausedSpans(result.trace);
      expect(spans.map((s) => s.stream).sort()).toEqual(['report/u1', 'tick']);
      for (const s of spans) {
        const [from, to] = s.stream === 'tick' ? [6, 11.5] : [5, 10];
        expect(s.first).toBeGreaterThanOrEqual(from);
        expect(s.last).toBeLessThanOrEqual(to);
        expect(s.last - s.first).toBeGreaterThanOrEqual(2);
        // None of its fire times ran.
        expect(
          runs.filter(
            (r) => r.occ.startsWith(`${s.stream}@`) && fireOf(r.occ) >= s.first && fireOf(r.occ) <= s.last,
          ),
        ).toEqual([]);
      }
      // Runs resume after the resume.
      expect(runs.some((r) => r.occ.startsWith('tick@') && fireOf(r.occ) >= 13)).toBe(true);
      expect(runs.some((r) => r.occ.startsWith('report/u1@') && fireOf(r.occ) >= 12)).toBe(true);
    }
  });

  it('a pause never resumed: its fire times, and a backfill queued meanwhile, are neither required nor run', async () => {
    // The checked window runs from 2 s to 19.8 s (30 s less the settle time).
    const options: SimulateOptions = {
      seed: 1,
      nodes: 2,
      durationMs: 30_000,
      jobs: [
        {
          name: 'tick',
          options: { every: '1s', lockAtMostFor: '3s' },
          runMs: [20, 200],
          pauses: [{ at: 5_000 }],
          // Queued while paused: a paused job runs no backfill either, and none is asked of it.
          backfills: [{ from: sec(-3), to: sec(0), at: 8_000 }],
        },
      ],
    };
    const result = await simulate(options);
    if (!result.ok) expect.fail(formatReport(options, result));
    expect(starts(result.trace).filter((r) => r.at >= 6)).toEqual([]);
    expect(result.trace.some((l) => /backfill of job "tick" .* queued 3 occurrence/.test(l))).toBe(true);
  });
});

describe('simulate: backfills', () => {
  it('without faults: each fire time of the range that had not run runs once (source backfill); none that ran runs again', async () => {
    const options: SimulateOptions = {
      seed: 3,
      nodes: 3,
      durationMs: 30_000,
      jobs: [
        {
          name: 'tick',
          options: { every: '1s', lockAtMostFor: '3s', misfire: 'skip' },
          runMs: [20, 200],
          pauses: [{ at: 6_000, resumeAt: 11_500 }],
          backfills: [{ from: sec(4), to: sec(14), at: 15_000 }],
        },
        {
          name: 'report',
          options: { lockAtMostFor: '3s' },
          runMs: [20, 200],
          // Upserted at 0: its fire times from before never ran; 1 s and later did.
          schedules: [{ id: 'u1', every: '1s' }],
          backfills: [
            { scheduleId: 'u1', from: new Date(sec(-3)), to: new Date(sec(3)).toISOString(), at: 16_000 },
          ],
        },
      ],
    };
    const result = await simulate(options);
    if (!result.ok) expect.fail(formatReport(options, result));
    const runs = starts(result.trace);
    const backfilled = (stream: string) =>
      runs.filter((r) => r.occ.startsWith(`${stream}@`) && r.source === 'backfill').map((r) => fireOf(r.occ));
    // tick: exactly the paused span's fire times, each once, in order, after the call.
    const [span] = pausedSpans(result.trace);
    expect(span?.stream).toBe('tick');
    const paused = Array.from({ length: span!.last - span!.first + 1 }, (_, i) => span!.first + i);
    expect(backfilled('tick')).toEqual(paused);
    expect(runs.filter((r) => r.source === 'backfill').every((r) => r.at >= 15)).toBe(true);
    // Every fire time of [4, 14) ran exactly once, whichever way.
    for (let f = 4; f < 14; f++)
      expect(runs.filter((r) => r.occ === `tick@+${f}.000s`).length, `tick@+${f}s`).toBe(1);
    // u1: the fire times before its upsert, not those that ran on time.
    expect(backfilled('report/u1')).toEqual([-3, -2, -1, 0]);
    expect(result.trace.some((l) => /backfill of schedule "u1" .* queued 4 occurrence/.test(l))).toBe(true);
  });

  it('refuses bad pauses and backfills before anything runs, saying what to fix', async () => {
    const run = (job: Partial<SimJob>) =>
      simulate({
        seed: 1,
        durationMs: 10_000,
        jobs: [
          {
            name: 'report',
            options: { every: '1s' },
            schedules: [{ id: 'u1', every: '1s', removeAt: 6_000 }],
            ...job,
          },
        ],
      });
    const rejects = async (promise: Promise<unknown>, message: RegExp) => {
      const err = await promise.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(OncelyError);
      expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
      expect((err as Error).message).toMatch(message);
    };
    await rejects(
      run({ pauses: [{ at: 11_000 }] }),
      /pauses\[0\]: at must be virtual ms from 0 to durationMs/,
    );
    await rejects(
      run({ pauses: [{ at: 3_000, resumeAt: 2_000 }] }),
      /resumeAt must be virtual ms after at \(3000\)/,
    );
    await rejects(
      run({ pauses: [{ at: 1_000, resumAt: 2_000 } as never] }),
      /unknown field "resumAt" \(did you mean "resumeAt"\?\)/,
    );
    await rejects(
      run({ pauses: [{ scheduleId: 'u9', at: 1_000 }] }),
      /scheduleId must be the id of one of job "report"'s schedules \("u1"\)/,
    );
    await rejects(
      run({ pauses: [{ scheduleId: 'u1', at: 1_000, resumeAt: 8_000 }] }),
      /schedule "u1" is removed at 6000 while paused .* resume it before its removeAt/,
    );
    await rejects(
      run({ pauses: [{ at: 1_000, resumeAt: 5_000 }, { at: 4_000 }] }),
      /pauses\[1\]: job "report" is paused already at 4000 \(pauses\[0\] from 1000 until 5000\)/,
    );
    await rejects(
      run({ pauses: [{ at: 1_000, note: 'x'.repeat(1_001) }] }),
      /pauses\[0\]: note must be text of at most 1000/,
    );
    await rejects(
      run({ backfills: [{ from: sec(1), to: sec(2), at: 1_000 }] }),
      /backfills\[0\]: at must be virtual ms from 2000/,
    );
    await rejects(
      run({ backfills: [{ from: sec(3), to: sec(2), at: 5_000 }] }),
      /from \(.*\) must be before to/,
    );
    await rejects(
      run({ backfills: [{ from: sec(1), to: sec(6), at: 5_000 }] }),
      /to \(.*\) is after the store's clock at 5000/,
    );
    await rejects(
      run({ backfills: [{ from: 'yesterday', to: sec(2), at: 5_000 }] }),
      /backfills\[0\]: from must be a Date, an ISO-8601 string or epoch milliseconds/,
    );
    await rejects(
      run({ backfills: [{ scheduleId: 'u1', from: sec(1), to: sec(2), at: 7_000 }] }),
      /scheduleId must be one of job "report"'s schedules, in the store at 7000/,
    );
    await rejects(
      run({ options: {}, backfills: [{ from: sec(1), to: sec(2), at: 5_000 }] }),
      /job "report" has no trigger of its own .* give scheduleId/,
    );
    await rejects(
      run({ options: { every: '1ms' }, backfills: [{ from: sec(-20), to: sec(4), at: 5_000 }] }),
      /holds more than 10000 occurrences .* split the range/,
    );
  });
});

describe('simulate: pauses and backfills under faults', () => {
  // Each job with a pause and a backfill: the job's own trigger, stored schedules (paged: a
  // schedule paused, then the whole job while a schedule's backfill is queued) and a sharded job.
  const jobs = PAUSE_BACKFILL_MIX;

  it('the checker finds every paused skip borne out, every backfilled fire time run once, nothing lost', async () => {
    for (const seed of [1, 2, 3, 4]) {
      const options: SimulateOptions = { seed, nodes: 3, durationMs: 40_000, faults: SIM_FAULTS, jobs };
      const result = await simulate(options);
      if (!result.ok) expect.fail(formatReport(options, result));
      expect(result.stats.crashes + result.stats.partitions + result.stats.lostReplies).toBeGreaterThan(0);
      expect(pausedSpans(result.trace).length, `seed ${seed}`).toBeGreaterThanOrEqual(3);
      expect(
        starts(result.trace).filter((r) => r.source === 'backfill').length,
        `seed ${seed}`,
      ).toBeGreaterThan(5);
    }
  }, 60_000);
});

describe('simulate: the checker finds broken pauses and backfills', () => {
  const report: SimJob = {
    name: 'report',
    options: { lockAtMostFor: '3s', misfire: 'skip' },
    runMs: [20, 200],
    schedules: [
      { id: 'u1', every: '1s' },
      { id: 'u2', every: '1s' },
    ],
    pauses: [{ scheduleId: 'u1', at: 5_000, resumeAt: 10_000 }],
  };

  it('a paused span on record that no pause of its schedule covers is an unjustified skip', async () => {
    // A store that files schedule u1's pause (and its resume's span marker) under u2.
    const moved = (key: string) =>
      key === keys.schedulePause('u1')
        ? keys.schedulePause('u2')
        : key === keys.pauseSpan('report', 'u1')
          ? keys.pauseSpan('report', 'u2')
          : key;
    class PausesTheOther extends MemoryStore {
      override async get(key: string) {
        return super.get(moved(key));
      }
      override async getMany(list: readonly string[]) {
        return super.getMany(list.map(moved));
      }
      override async apply(ops: readonly WriteOp[]) {
        return super.apply(ops.map((op) => ({ ...op, key: moved(op.key) }) as WriteOp));
      }
    }
    const result = await simulate({
      seed: 1,
      nodes: 3,
      durationMs: 20_000,
      jobs: [report],
      server: (clock) => new PausesTheOther({ now: clock }),
    });
    const unjustified = result.violations.filter((v) => v.kind === 'unjustified-skip');
    expect(unjustified.map((v) => v.occ.replace(/@.*/, ''))).toEqual(['report/u2']);
    expect(unjustified[0]?.message).toMatch(
      /recorded skipped as paused .* no pause of its job or schedule covers them/,
    );
  });

  it('a backfill whose requests never reach the nodes is a loss', async () => {
    // A store whose put-if-absent acknowledges backfill requests without keeping them.
    class DropsBackfills extends MemoryStore {
      override async claimPage(lease: LeaseRequest, ops: readonly PageOp[]): Promise<PageClaim> {
        const dropped = (op: PageOp) => op.op === 'create' && op.key.startsWith('ctl|bf|');
        const kept = ops.filter((op) => !dropped(op));
        const claim = await super.claimPage(lease, kept);
        let i = 0;
        return { lease: claim.lease, results: ops.map((op) => (dropped(op) ? true : claim.results[i++]!)) };
      }
    }
    // (Long enough that u1's resume at 10 s falls in the checked window: a backfill of a schedule
    // still paused at its end is not asked to have run.)
    const result = await simulate({
      seed: 1,
      nodes: 3,
      durationMs: 25_000,
      jobs: [{ ...report, backfills: [{ scheduleId: 'u1', from: sec(-3), to: sec(3), at: 6_000 }] }],
      server: (clock) => new DropsBackfills({ now: clock }),
    });
    expect(result.trace.some((l) => /backfill of schedule "u1" .* queued 4 occurrence/.test(l))).toBe(true);
    const lost = result.violations.filter((v) => v.kind === 'lost-fire-time');
    expect(lost.map((v) => v.occ)).toEqual([-3, -2, -1, 0].map((s) => `report/u1@+${s}.000s`));
    expect(lost[0]?.message).toMatch(/backfill\(\) at 6\.000s of \[.*\) covers it, yet it never ran/);
    expect(result.violations.filter((v) => v.kind !== 'lost-fire-time')).toEqual([]);
  });

  it('a backfill that runs fire times that had run is a backfill rerun', async () => {
    // A store that shows nobody tick's history: backfill() and the claims find nothing run.
    class Forgets extends MemoryStore {
      override async getMany(list: readonly string[]) {
        const found = await super.getMany(list);
        return found.map((v, i) => (list[i]!.startsWith('hist|tick|') ? null : v));
      }
      override async scan(prefix: string, options?: Parameters<MemoryStore['scan']>[1]) {
        return prefix.startsWith('hist|tick|') ? [] : super.scan(prefix, options);
      }
    }
    const result = await simulate({
      seed: 1,
      nodes: 3,
      durationMs: 25_000,
      jobs: [
        {
          name: 'tick',
          options: { every: '1s', lockAtMostFor: '3s' },
          runMs: [20, 200],
          backfills: [{ from: sec(3), to: sec(6), at: 8_000 }],
        },
      ],
      server: (clock) => new Forgets({ now: clock }),
    });
    const reruns = result.violations.filter((v) => v.kind === 'backfill-rerun');
    expect(reruns.map((v) => v.occ)).toEqual(['tick@+3.000s', 'tick@+4.000s', 'tick@+5.000s']);
    expect(reruns[0]?.message).toMatch(
      /source backfill\) at [\d.]+s ran it as a backfill, but it had run: .*source schedule/,
    );
  });

  it('a pause call that fails is a setup failure, not a quiet run without the pause', async () => {
    class RefusesPauses extends MemoryStore {
      override async apply(ops: readonly WriteOp[]) {
        if (ops.some((op) => op.key.startsWith('ctl|spause|'))) throw new Error('permission denied');
        return super.apply(ops);
      }
    }
    const result = await simulate({
      seed: 1,
      nodes: 2,
      durationMs: 15_000,
      jobs: [report],
      server: (clock) => new RefusesPauses({ now: clock }),
    });
    expect(result.violations.map((v) => [v.kind, v.message])).toEqual([
      ['setup-failed', 'pause schedule "u1" at 5000 failed: permission denied'],
    ]);
  });

  it('judges backfill runs on a history: once each, only in range, never after a run', () => {
    const h = new History(() => 0);
    let token = 10;
    const run = (fire: number, source: 'schedule' | 'backfill' | 'recover', attempt = 1) =>
      h.end(
        h.start({
          occ: `tick@+${fire}.000s`,
          job: 'tick',
          scheduleId: undefined,
          fireTime: sec(fire),
          shard: undefined,
          node: 'n1',
          attempt,
          token: token++,
          source,
        }),
        'ok',
      );
    const job = (judged: boolean): CheckedJob => ({
      name: 'tick',
      fireTimes: [],
      shards: [undefined],
      mustFinish: false,
      backfills: [{ at: 20_000, from: sec(1), to: sec(5), fireTimes: [1, 2, 3, 4].map(sec), judged }],
    });
    const found = (judged = true) => check(h, [job(judged)], true).map((v) => [v.kind, v.occ]);
    run(1, 'schedule');
    run(2, 'backfill');
    run(3, 'backfill');
    // 4 never ran: a loss (judged calls only).
    expect(found()).toEqual([['lost-fire-time', 'tick@+4.000s']]);
    expect(found(false)).toEqual([]);
    run(4, 'backfill');
    expect(found()).toEqual([]);
    // 1 had run on time: backfilled again, a rerun; 3 run again after its backfill run, too.
    run(1, 'backfill', 2);
    run(3, 'recover', 2);
    run(3, 'schedule', 3);
    expect(found()).toEqual([
      ['backfill-rerun', 'tick@+1.000s'],
      ['backfill-rerun', 'tick@+3.000s'],
    ]);
    // A backfill run at a fire time no call covers.
    run(7, 'backfill');
    expect(found()).toContainEqual(['unexpected-fire-time', 'tick@+7.000s']);
  });

  it('judges paused skips on a history: each borne out by a pause, its span handled, a fire time after it lost', () => {
    let now = 0;
    const h = new History(() => now);
    const occ = { job: 'tick', scheduleId: undefined, fireTime: sec(6), shard: undefined };
    now = 12_000;
    h.applied(
      'n1',
      [
        {
          op: 'put',
          key: keys.history(occ, 1),
          value: encodeHistory({
            job: 'tick',
            fireTime: new Date(sec(6)),
            node: 'n1',
            attempt: 1,
            token: 0,
            source: 'schedule',
            status: 'skipped',
            startedAt: new Date(sec(12)),
            finishedAt: new Date(sec(12)),
            reason: 'paused',
            span: { first: new Date(sec(6)), last: new Date(sec(10)), count: 5 },
          }),
        },
      ],
      [true],
    );
    const job = (paused: CheckedJob['paused']): CheckedJob => ({
      name: 'tick',
      fireTimes: [6, 7, 8, 9, 10, 11].map(sec),
      shards: [undefined],
      mustFinish: false,
      ...(paused && { paused }),
    });
    // Paused from 5.5 s to 11 s: borne out; 6-10 handled by the span, 11 lost.
    const pause = (from: number, to: number) => (_id: string | undefined, f: number) =>
      f >= sec(from) && f <= sec(to);
    expect(check(h, [job(pause(5.5, 11))], true).map((v) => [v.kind, v.occ])).toEqual([
      ['lost-fire-time', 'tick@+11.000s'],
    ]);
    // A pause that does not reach the span's last fire time, and no pause at all.
    for (const paused of [pause(5.5, 8), undefined])
      expect(check(h, [job(paused)], false).map((v) => [v.kind, v.occ])).toEqual([
        ['unjustified-skip', 'tick@+6.000s'],
      ]);
  });
});
