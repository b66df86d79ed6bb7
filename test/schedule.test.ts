import { describe, expect, it } from 'vitest';
import { OncelyError } from '../src/core/errors.js';
import { fireSpan } from '../src/schedule/fire-span.js';
import { compileTrigger, fireTimes, type Trigger } from '../src/schedule/index.js';

const iso = (t: Trigger, after: string, count: number) =>
  fireTimes(t, { after: new Date(after), count }).map((d) => d.toISOString());

describe('fireTimes: every', () => {
  it('fires on multiples of the interval counted from the epoch, strictly after `after`', () => {
    expect(iso({ every: '10s' }, '2026-01-01T12:00:03.500Z', 2)).toEqual([
      '2026-01-01T12:00:10.000Z',
      '2026-01-01T12:00:20.000Z',
    ]);
    expect(iso({ every: '10s' }, '2026-01-01T12:00:10.000Z', 1)).toEqual(['2026-01-01T12:00:20.000Z']);
    expect(fireTimes({ every: 7000 }, { after: 0, count: 2 }).map((d) => d.getTime())).toEqual([7000, 14000]);
    expect(iso({ every: 'PT1H' }, '2026-03-29T00:59:59.999Z', 2)).toEqual([
      '2026-03-29T01:00:00.000Z',
      '2026-03-29T02:00:00.000Z',
    ]);
  });
});

describe('fireTimes: at', () => {
  it('fires once, only if still ahead', () => {
    expect(iso({ at: '2026-05-01T10:00:00Z' }, '2026-05-01T09:00:00Z', 3)).toEqual([
      '2026-05-01T10:00:00.000Z',
    ]);
    expect(iso({ at: new Date('2026-05-01T10:00:00Z') }, '2026-05-01T10:00:00Z', 3)).toEqual([]);
  });
});

describe('fireTimes: cron', () => {
  it('defaults to UTC and supports seconds, L, W and #', () => {
    expect(iso({ cron: '0 9 * * *' }, '2026-01-01T09:00:00Z', 2)).toEqual([
      '2026-01-02T09:00:00.000Z',
      '2026-01-03T09:00:00.000Z',
    ]);
    expect(iso({ cron: '*/15 * * * * *' }, '2026-01-01T00:00:00.500Z', 2)).toEqual([
      '2026-01-01T00:00:15.000Z',
      '2026-01-01T00:00:30.000Z',
    ]);
    expect(iso({ cron: '0 12 L * *' }, '2026-02-01T00:00:00Z', 1)).toEqual(['2026-02-28T12:00:00.000Z']);
    expect(iso({ cron: '0 12 15W * *' }, '2026-02-01T00:00:00Z', 1)).toEqual(['2026-02-16T12:00:00.000Z']); // 15th is a Sunday
    expect(iso({ cron: '0 12 * * FRI#2' }, '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-09T12:00:00.000Z']);
  });

  // Each row: a zone, a pattern, `after`, and the expected next fire times in UTC, worked out by hand
  // from the zone's 2026 transitions (not from the library under test).
  const dst: [string, string, string, string, string[]][] = [
    // New York: 2026-03-08 02:00 EST -> 03:00 EDT; 2026-11-01 02:00 EDT -> 01:00 EST.
    [
      'gap: fixed time runs once right after',
      'America/New_York',
      '30 2 * * *',
      '2026-03-07T12:00:00Z',
      ['2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z'],
    ],
    [
      'repeat: fixed time runs once',
      'America/New_York',
      '30 1 * * *',
      '2026-10-31T12:00:00Z',
      ['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z'],
    ],
    [
      'repeat: sub-hourly keeps real time',
      'America/New_York',
      '*/30 * * * *',
      '2026-11-01T04:00:00Z',
      [
        '2026-11-01T04:30:00.000Z',
        '2026-11-01T05:00:00.000Z',
        '2026-11-01T05:30:00.000Z',
        '2026-11-01T06:00:00.000Z',
        '2026-11-01T06:30:00.000Z',
        '2026-11-01T07:00:00.000Z',
      ],
    ],
    [
      'gap: sub-hourly keeps real time',
      'America/New_York',
      '*/30 * * * *',
      '2026-03-08T06:00:00Z',
      ['2026-03-08T06:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-08T07:30:00.000Z'],
    ],
    // Berlin: 2026-03-29 02:00 CET -> 03:00 CEST; 2026-10-25 03:00 CEST -> 02:00 CET.
    [
      'gap: fixed time runs once right after',
      'Europe/Berlin',
      '30 2 * * *',
      '2026-03-28T12:00:00Z',
      ['2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z'],
    ],
    [
      'repeat: fixed time runs once',
      'Europe/Berlin',
      '30 2 * * *',
      '2026-10-24T12:00:00Z',
      ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z'],
    ],
    [
      'repeat: sub-hourly keeps real time',
      'Europe/Berlin',
      '0,30 * * * *',
      '2026-10-25T00:00:00Z',
      [
        '2026-10-25T00:30:00.000Z',
        '2026-10-25T01:00:00.000Z',
        '2026-10-25T01:30:00.000Z',
        '2026-10-25T02:00:00.000Z',
      ],
    ],
    // Sydney: 2026-04-05 03:00 AEDT -> 02:00 AEST; 2026-10-04 02:00 AEST -> 03:00 AEDT.
    [
      'gap: fixed time runs once right after',
      'Australia/Sydney',
      '30 2 * * *',
      '2026-10-03T00:00:00Z',
      ['2026-10-03T16:00:00.000Z', '2026-10-04T15:30:00.000Z'],
    ],
    [
      'repeat: fixed time runs once',
      'Australia/Sydney',
      '30 2 * * *',
      '2026-04-04T00:00:00Z',
      ['2026-04-04T15:30:00.000Z', '2026-04-05T16:30:00.000Z'],
    ],
    // Lord Howe shifts by 30 minutes: 2026-10-04 02:00 -> 02:30 (+11); 2026-04-05 02:00 -> 01:30 (+10:30).
    [
      'gap: fixed time runs once right after',
      'Australia/Lord_Howe',
      '15 2 * * *',
      '2026-10-03T00:00:00Z',
      ['2026-10-03T15:30:00.000Z', '2026-10-04T15:15:00.000Z'],
    ],
    [
      'repeat: fixed time runs once',
      'Australia/Lord_Howe',
      '45 1 * * *',
      '2026-04-04T00:00:00Z',
      ['2026-04-04T14:45:00.000Z', '2026-04-05T15:15:00.000Z'],
    ],
    [
      'repeat: sub-hourly keeps real time',
      'Australia/Lord_Howe',
      '*/15 * * * *',
      '2026-04-04T14:40:00Z',
      [
        '2026-04-04T14:45:00.000Z',
        '2026-04-04T15:00:00.000Z',
        '2026-04-04T15:15:00.000Z',
        '2026-04-04T15:30:00.000Z',
      ],
    ],
    // Shanghai has no DST: 09:30 is 01:30 UTC on every transition date of the zones above.
    [
      'no DST on others’ transition days',
      'Asia/Shanghai',
      '30 9 * * *',
      '2026-03-07T12:00:00Z',
      ['2026-03-08T01:30:00.000Z', '2026-03-09T01:30:00.000Z'],
    ],
    [
      'no DST on others’ transition days',
      'Asia/Shanghai',
      '30 9 * * *',
      '2026-10-24T12:00:00Z',
      ['2026-10-25T01:30:00.000Z', '2026-10-26T01:30:00.000Z'],
    ],
  ];
  it.each(dst)('%s — %s %s', (_label, timezone, cron, after, expected) => {
    expect(iso({ cron, timezone }, after, expected.length)).toEqual(expected);
  });

  it('agrees with itself: asking from any earlier instant gives the same fire times (all nodes agree)', () => {
    const t = compileTrigger({ cron: '*/7 * * * *', timezone: 'Europe/Berlin' });
    const all = fireTimes(t, { after: new Date('2026-10-24T23:00:00Z'), count: 40 }).map((d) => d.getTime());
    for (let i = 1; i < all.length; i++) {
      expect(all[i]!).toBeGreaterThan(all[i - 1]!);
      const fromMiddle = fireTimes(t, { after: all[i - 1]! + 1, count: 1 })[0]!.getTime();
      expect(fromMiddle).toBe(all[i]);
    }
  });

  it('patterns share one frozen year table (croner gives each its own 80 KB one), and fire as before', () => {
    type Inner = { _states: { pattern: { year: number[]; starYear: boolean } } };
    const year = (t: ReturnType<typeof compileTrigger>) =>
      t.kind === 'cron' ? (t.pattern as unknown as Inner)._states.pattern.year : undefined;
    const a = compileTrigger({ cron: '30 9 * * *', timezone: 'Asia/Kolkata' });
    const b = compileTrigger({ cron: '0 0 29 2 *', timezone: 'UTC' });
    expect(year(a)).toBe(year(b));
    expect(Object.isFrozen(year(a))).toBe(true);
    expect(year(a)).toHaveLength(10_000);
    expect(iso({ cron: '30 9 * * *', timezone: 'Asia/Kolkata' }, '2026-03-01T03:00:00Z', 2)).toEqual([
      '2026-03-01T04:00:00.000Z',
      '2026-03-02T04:00:00.000Z',
    ]);
    // A leap day: the next one is 2028's, found by walking the (shared) years.
    expect(iso({ cron: '0 0 29 2 *' }, '2026-01-01T00:00:00Z', 2)).toEqual([
      '2028-02-29T00:00:00.000Z',
      '2032-02-29T00:00:00.000Z',
    ]);
  });
});

describe('trigger validation', () => {
  const bad: [string, unknown][] = [
    ['unknown time zone', { cron: '0 * * * *', timezone: 'Mars/Olympus_Mons' }],
    ['bad cron', { cron: '61 * * * *' }],
    ['cron with too many fields', { cron: '0 0 0 * * * 2026' }],
    ['empty cron', { cron: ' ' }],
    ['two triggers', { cron: '0 * * * *', every: '1m' }],
    ['no trigger', {}],
    ['bad interval', { every: 'often' }],
    ['zero interval', { every: 0 }],
    ['bad instant', { at: 'tomorrow-ish' }],
    ['time zone on an interval', { every: '1m', timezone: 'UTC' }],
  ];
  it.each(bad)('%s -> INVALID_ARGUMENT', (_label, trigger) => {
    let error: unknown;
    try {
      compileTrigger(trigger as Trigger, 'job "report"');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(OncelyError);
    expect((error as OncelyError).code).toBe('INVALID_ARGUMENT');
    expect((error as OncelyError).message).toContain('job "report"');
  });

  it('refuses a bad count', () => {
    expect(() => fireTimes({ every: '1s' }, { after: 0, count: 0 })).toThrow(OncelyError);
  });
});

describe('fireSpan: the fire times of an interval, summarised', () => {
  /** Every fire time in (after, before), the slow way. */
  function brute(trigger: Trigger, after: number, before: number): number[] {
    const out: number[] = [];
    for (let at = after; ; ) {
      const next = fireTimes(trigger, { after: at, count: 500 }).map((d) => d.getTime());
      for (const f of next) {
        if (f >= before) return out;
        out.push(f);
      }
      if (next.length < 500) return out;
      at = next.at(-1)!;
    }
  }

  const cases: [string, Trigger, string, string, number][] = [
    ['every, exact ends', { every: '1s' }, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:10.000Z', 3],
    ['every, fractional end', { every: '10s' }, '2026-01-01T00:00:03.500Z', '2026-01-01T00:01:00.001Z', 100],
    ['at, inside', { at: '2026-05-01T10:00:00Z' }, '2026-05-01T09:00:00Z', '2026-05-01T11:00:00Z', 5],
    ['cron, short', { cron: '*/15 * * * *' }, '2026-01-01T00:00:00Z', '2026-01-01T03:00:00Z', 4],
    // Over 1,000 fire times: measured by its ends, the tail walked from croner's previousRuns.
    ['cron, long (jumped)', { cron: '* * * * *' }, '2026-01-01T00:00:00Z', '2026-01-03T00:00:30Z', 101],
    // Across the fall-back hour in Berlin (01:xx twice for a sub-hourly job, once for a fixed one).
    [
      'cron, DST, jumped',
      { cron: '*/2 * * * *', timezone: 'Europe/Berlin' },
      '2025-10-23T00:00:00Z',
      '2025-10-26T02:10:00Z',
      150,
    ],
    [
      'cron, DST fixed hour',
      { cron: '30 2 * * *', timezone: 'Europe/Berlin' },
      '2025-10-01T00:00:00Z',
      '2025-11-01T00:00:00Z',
      5,
    ],
  ];
  it.each(
    cases,
  )('%s: first, count and tail agree with enumerating every fire time', (label, trigger, from, to, tail) => {
    const after = Date.parse(from);
    const before = Date.parse(to);
    const all = brute(trigger, after, before);
    const span = fireSpan(compileTrigger(trigger), after, before, tail);
    expect(span, label).toBeDefined();
    expect(span!.first).toBe(all[0]);
    if (all.length <= 1000) expect(span!.count).toBe(all.length);
    else expect(span!.count).toBeUndefined();
    expect(span!.tail).toEqual(all.slice(-tail));
  });

  it('is undefined when no fire time is in the interval', () => {
    expect(fireSpan(compileTrigger({ every: '1s' }), 1000, 2000, 5)).toBeUndefined();
    expect(fireSpan(compileTrigger({ at: 5000 }), 5000, 9000, 5)).toBeUndefined();
    expect(
      fireSpan(
        compileTrigger({ cron: '0 0 1 1 *' }),
        Date.parse('2026-01-02T00:00:00Z'),
        Date.parse('2026-06-01T00:00:00Z'),
        5,
      ),
    ).toBeUndefined();
  });

  it('counts 600,000 fire times of a 1 s job without enumerating them', () => {
    const span = fireSpan(compileTrigger({ every: '1s' }), 0, 600_000_500, 2)!;
    expect(span).toEqual({ first: 1000, count: 600_000, tail: [599_999_000, 600_000_000] });
  });
});

describe('remembered next fire times', () => {
  it('answers any instant from the spans it remembers exactly as croner does', async () => {
    const { nextFireTimes } = await import('../src/schedule/fire-times.js');
    const { compileShared } = await import('../src/schedule/shared-triggers.js');
    for (const t of [
      { cron: '30 2 * * *', timezone: 'Europe/Berlin' },
      { cron: '*/15 * * * *', timezone: 'Australia/Lord_Howe' },
      { cron: '0 9 29 2 *' },
      { cron: '15 * * * * *', timezone: 'America/New_York' },
    ] as const) {
      const memo = compileShared(t, 'test');
      // Asked out of order and repeatedly, around DST changes and fire times (±1 ms).
      const start = Date.UTC(2026, 2, 28);
      let seed = 11;
      const instants: number[] = [];
      for (let i = 0; i < 400; i++) {
        seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
        instants.push(start + (seed % (3 * 86_400_000)));
      }
      const exact = instants.flatMap((a) =>
        fireTimes(t, { after: a, count: 2 })
          .slice(0, 1)
          .map((d) => d.getTime()),
      );
      instants.push(...exact, ...exact.map((f) => f - 1), ...exact.map((f) => f + 1));
      for (const after of [...instants, ...instants.slice().reverse()]) {
        // count 2 goes to croner without the memo: the oracle.
        expect([after, nextFireTimes(memo, after, 1)[0]]).toEqual([
          after,
          fireTimes(t, { after, count: 2 })[0]?.getTime(),
        ]);
      }
    }
  });

  it('compiles each distinct trigger once for the whole process, and still refuses bad ones every time', async () => {
    const { compileShared } = await import('../src/schedule/shared-triggers.js');
    const a = compileShared({ cron: '7 7 * * *', timezone: 'Asia/Kolkata' }, 'a');
    expect(compileShared({ cron: '7 7 * * *', timezone: 'Asia/Kolkata' }, 'b')).toBe(a);
    expect(compileShared({ cron: '7 7 * * *', timezone: 'UTC' }, 'c')).not.toBe(a);
    for (let i = 0; i < 2; i++)
      expect(() => compileShared({ cron: '61 * * * *' }, `bad ${i}`)).toThrow(new RegExp(`bad ${i}`));
  });

  it('compiles a stored schedule record by its trigger fields alone, typed, as compileTrigger would', async () => {
    const { compileShared } = await import('../src/schedule/shared-triggers.js');
    const { compileTrigger } = await import('../src/schedule/trigger.js');
    const what = () => 'schedule "u1"';
    // As read back: parsed JSON, any fields.
    const stored = (r: Record<string, unknown>) => compileShared(r, what);
    const record = {
      id: 'u1',
      job: 'j',
      data: { x: 1 },
      v: 'a.0',
      cron: '7 7 * * *',
      timezone: 'Asia/Kolkata',
    };
    const a = stored(record);
    expect(a).toEqual(compileTrigger({ cron: '7 7 * * *', timezone: 'Asia/Kolkata' }));
    // Another user's record of the same trigger: the same compiled trigger.
    expect(stored({ ...record, id: 'u2', data: { x: 2 }, v: 'b.0' })).toBe(a);
    expect(stored({ ...record, timezone: 'UTC' })).not.toBe(a);
    // Types key apart: every 10000 (ms) and '10s' are two entries, both right; a number-like
    // string is not taken for the number's trigger.
    const ms = stored({ every: 10_000 });
    expect(ms).toEqual({ kind: 'every', everyMs: 10_000 });
    expect(stored({ every: '10s' })).toEqual(ms);
    expect(stored({ every: '10s' })).not.toBe(ms);
    expect(() => stored({ every: '10000' })).toThrow(/schedule "u1"/);
    // No text runs into the next field: cron '0 9 * * *' in UTC, compiled first, does not answer
    // for cron '0 9 * * *UTC' (no zone), which is invalid.
    expect(stored({ cron: '0 9 * * *', timezone: 'UTC' })).toEqual(
      compileTrigger({ cron: '0 9 * * *', timezone: 'UTC' }),
    );
    expect(() => stored({ cron: '0 9 * * *UTC' })).toThrow(/schedule "u1": cron/);
    // Two kinds in one record, or none: refused, naming the schedule, every time.
    for (let i = 0; i < 2; i++) {
      expect(() => stored({ cron: '0 9 * * *', every: '1m' })).toThrow(/schedule "u1": give only one/);
      expect(() => stored({ id: 'x' })).toThrow(/schedule "u1": give one of/);
    }
  });
});
