import { describe, expect, it } from 'vitest';
import { OncelyError } from '../src/core/errors.js';
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
