import { describe, expect, it } from 'vitest';
import { OncelyError } from '../src/core/errors.js';
import { fireSpan } from '../src/schedule/fire-span.js';
import { nextFireTimes } from '../src/schedule/fire-times.js';
import {
  compileJitter,
  jitterOffset,
  MAX_JITTER_MS,
  missedBound,
  missedNominal,
  scheduledAt,
  startOfFire,
} from '../src/schedule/jitter.js';
import { compileTrigger } from '../src/schedule/trigger.js';

type Trigger = ReturnType<typeof compileTrigger>;
type Jitter = ReturnType<typeof compileJitter>;

const everyMinute = compileTrigger({ every: '1m' });
const daily = compileTrigger({ cron: '0 9 * * *' });

function rejects(value: unknown, trigger = daily): OncelyError {
  try {
    compileJitter(value, trigger, 'job "x"');
  } catch (err) {
    expect(err).toBeInstanceOf(OncelyError);
    expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
    return err as OncelyError;
  }
  throw new Error(`accepted ${JSON.stringify(value)}`);
}

describe('jitter: validation', () => {
  it('accepts a duration (per schedule) or { max, per }', () => {
    expect(compileJitter('5m', daily, 'x')).toEqual({ maxMs: 300_000, per: 'schedule' });
    expect(compileJitter(1500, everyMinute, 'x')).toEqual({ maxMs: 1500, per: 'schedule' });
    expect(compileJitter({ max: '10s', per: 'fire' }, everyMinute, 'x')).toEqual({
      maxMs: 10_000,
      per: 'fire',
    });
    expect(compileJitter({ max: 'PT1M' }, daily, 'x')).toEqual({ maxMs: 60_000, per: 'schedule' });
    expect(compileJitter(undefined, daily, 'x')).toBeUndefined();
    expect(compileJitter(0, daily, 'x')).toBeUndefined();
  });

  it('refuses bad input with a message saying what to fix', () => {
    expect(rejects(-5).message).toMatch(/non-negative/);
    expect(rejects('soon').message).toMatch(/not a duration/);
    expect(rejects(true).message).toMatch(/jitter must be a duration/);
    expect(rejects({ max: '1s', per: 'minute' }).message).toMatch(/per must be 'schedule' or 'fire'/);
    expect(rejects({ per: 'fire' }).message).toMatch(/max is missing/);
    expect(rejects({ max: '1s', spread: 1 }).message).toMatch(/unknown field "spread"/);
    expect(rejects('8d').message).toMatch(/at most 7 days/);
    expect(rejects('1m', everyMinute).message).toMatch(/less than the interval/);
    expect(rejects({ max: '61s' }, everyMinute).message).toMatch(/less than the interval/);
    expect(compileJitter(59_999, everyMinute, 'x')?.maxMs).toBe(59_999);
    expect(MAX_JITTER_MS).toBe(604_800_000);
  });
});

describe('jitter: offsets', () => {
  const j = compileJitter('5m', daily, 'x')!;
  const fire = compileJitter({ max: '5m', per: 'fire' }, daily, 'x')!;
  const F = Date.UTC(2026, 0, 1, 9);

  it('stay in [0, max) and are 0 without jitter', () => {
    expect(jitterOffset(undefined, 'report', 'u1', F)).toBe(0);
    for (let i = 0; i < 2000; i++) {
      const o = jitterOffset(j, 'report', `u${i}`, F);
      expect(o).toBeGreaterThanOrEqual(0);
      expect(o).toBeLessThan(300_000);
      expect(Number.isInteger(o)).toBe(true);
      const p = jitterOffset(fire, 'report', 'u1', F + i * 86_400_000);
      expect(p).toBeGreaterThanOrEqual(0);
      expect(p).toBeLessThan(300_000);
    }
  });

  it("per 'schedule' is stable for a schedule (Jenkins' H) and differs between schedules and jobs", () => {
    const days = Array.from({ length: 30 }, (_, d) =>
      jitterOffset(j, 'report', 'user-42', F + d * 86_400_000),
    );
    expect(new Set(days).size).toBe(1);
    expect(jitterOffset(j, 'report', 'user-42', F)).not.toBe(jitterOffset(j, 'report', 'user-43', F));
    expect(jitterOffset(j, 'report', 'user-42', F)).not.toBe(jitterOffset(j, 'other', 'user-42', F));
    // A job's own trigger (no schedule id) has one offset too.
    expect(jitterOffset(j, 'report', undefined, F)).toBe(
      jitterOffset(j, 'report', undefined, F + 86_400_000),
    );
    // The same inputs give the same offset (what every node computes).
    expect(jitterOffset(j, 'report', 'user-42', F)).toBe(jitterOffset({ ...j }, 'report', 'user-42', F));
  });

  it("per 'fire' differs by fire time, the same on every call", () => {
    const days = Array.from({ length: 30 }, (_, d) => jitterOffset(fire, 'report', 'u1', F + d * 86_400_000));
    expect(new Set(days).size).toBeGreaterThan(25);
    expect(jitterOffset(fire, 'report', 'u1', F)).toBe(jitterOffset(fire, 'report', 'u1', F));
  });

  it('spread uniformly over [0, max) for 10,000 ids', () => {
    const buckets = new Array<number>(10).fill(0);
    for (let i = 0; i < 10_000; i++) {
      const o = jitterOffset(j, 'report', `report:user-${i}`, F);
      buckets[Math.floor(o / 30_000)]!++;
    }
    // 1,000 expected per bucket; a chi-square of 10 buckets beyond 27.9 has p < 0.001.
    const chi = buckets.reduce((sum, n) => sum + (n - 1000) ** 2 / 1000, 0);
    expect(chi).toBeLessThan(27.9);
    for (const n of buckets) expect(n).toBeGreaterThan(850);
  });

  it('are capped at the gap to the following fire time (a cron whose gaps vary)', () => {
    const big = compileJitter('2h', daily, 'x')!;
    for (let i = 0; i < 200; i++) {
      const o = jitterOffset(big, 'j', `s${i}`, F, F + 60_000);
      expect(o).toBeLessThan(60_000);
    }
    expect(scheduledAt(big, 'j', 's1', F, F + 60_000)).toBe(F + jitterOffset(big, 'j', 's1', F, F + 60_000));
    expect(jitterOffset(big, 'j', 's1', F, F)).toBe(0);
  });

  it('missedNominal: the offset shared per schedule, the whole max per fire', () => {
    expect(missedNominal(undefined, 0, 1000)).toBe(1000);
    expect(missedNominal(j, 1234, 10_000_000)).toBe(10_000_000 - 1234);
    expect(missedNominal(fire, 1234, 10_000_000)).toBe(10_000_000 - 300_000);
  });
});

describe('jitter: the exact bound of missed fire times (missedBound)', () => {
  // The latest fire time from `first` on whose start is before `missedBefore`, walked one by one.
  const walked = (jitter: Jitter, trigger: Trigger, first: number, missedBefore: number) => {
    let last = first;
    for (let f = nextFireTimes(trigger, first, 1)[0]; f !== undefined && f < missedBefore; ) {
      if (startOfFire(jitter, trigger, 'j', 's', f) < missedBefore) last = f;
      f = nextFireTimes(trigger, f, 1)[0];
    }
    return last;
  };
  // The latest fire time below an exclusive bound (bounds between two fire times say the same).
  const latestBelow = (trigger: Trigger, first: number, bound: number) =>
    fireSpan(trigger, first - 1, bound, 1)?.tail.at(-1);
  const cases: [string, Trigger, unknown][] = [
    [
      'every 5 s, a fresh offset under 4.5 s',
      compileTrigger({ every: '5s' }),
      { max: '4500ms', per: 'fire' },
    ],
    [
      'a cron every 5 min, a fresh offset under 4 min',
      compileTrigger({ cron: '*/5 * * * *' }),
      { max: '4m', per: 'fire' },
    ],
    [
      'a cron at 09:00 and 12:00, a fresh offset under 2 h',
      compileTrigger({ cron: '0 9,12 * * *' }),
      { max: '2h', per: 'fire' },
    ],
  ];
  for (const [what, trigger, spec] of cases)
    it(`${what}: the walk's answer, from one look`, () => {
      const jitter = compileJitter(spec, trigger, 'job "j"');
      let seed = 7;
      const rand = () => {
        seed = (seed * 48271) % 2147483647;
        return seed / 2147483647;
      };
      const t0 = Date.UTC(2026, 11, 7, 9);
      const span = trigger.kind === 'cron' ? 3 * 86_400_000 : 3_600_000;
      for (let i = 0; i < 200; i++) {
        const first = nextFireTimes(trigger, t0 + Math.floor(rand() * span), 1)[0]!;
        const firstAt = startOfFire(jitter, trigger, 'j', 's', first);
        // A missedBefore past `first`'s start, up to a fifth of the span on.
        const missedBefore = firstAt + 1 + Math.floor(rand() * (span / 5));
        const bound = missedBound(jitter, trigger, 'j', 's', first, firstAt, missedBefore);
        expect(bound).toBeGreaterThan(first);
        expect(latestBelow(trigger, first, bound)).toBe(walked(jitter, trigger, first, missedBefore));
      }
    });
});
