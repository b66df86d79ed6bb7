/**
 * The pure exclusion rules (schedule/exclude.ts): what each entry matches, on every node alike.
 * Cron entries at the pattern's resolution (5 fields: whole minutes; 6: whole seconds), ranges
 * half-open, calendars by the date in the calendar's zone, else the trigger's, else UTC.
 */
import { describe, expect, it } from 'vitest';
import { OncelyError } from '../src/core/errors.js';
import { bounded, compileBounds } from '../src/schedule/bounds.js';
import { compileExclude, cronZone, dateIn, type Exclusion, isExcluded } from '../src/schedule/exclude.js';
import { compileTrigger } from '../src/schedule/trigger.js';
import { checkHistory } from '../src/testing/history-check.js';

const none = () => undefined;
const at = (iso: string) => Date.parse(iso);
function excluded(list: Exclusion[], iso: string, zone?: string, calendars = {}): boolean {
  const compiled = compileExclude(list, zone, 'test')!;
  const held = new Map(
    Object.entries(calendars as Record<string, { dates: string[]; timezone?: string }>).map(([id, c]) => [
      id,
      { dates: new Set(c.dates), timezone: c.timezone },
    ]),
  );
  return isExcluded(compiled, at(iso), (id) => held.get(id) ?? none());
}

describe('exclude', () => {
  it('a 5-field cron excludes whole minutes in its zone; a 6-field one whole seconds', () => {
    const officeHours: Exclusion[] = [{ cron: '* 9-17 * * 1-5', timezone: 'Europe/Berlin' }];
    // Wednesday 2026-12-02 10:30:05 Berlin (09:30:05 UTC): inside, whatever the second.
    expect(excluded(officeHours, '2026-12-02T09:30:05.250Z')).toBe(true);
    expect(excluded(officeHours, '2026-12-02T16:59:59.999Z')).toBe(true); // 17:59:59 Berlin
    expect(excluded(officeHours, '2026-12-02T17:00:00.000Z')).toBe(false); // 18:00 Berlin
    expect(excluded(officeHours, '2026-12-05T09:30:00.000Z')).toBe(false); // Saturday
    const secondZero: Exclusion[] = [{ cron: '0 * * * * *' }];
    expect(excluded(secondZero, '2026-12-02T09:30:00.700Z')).toBe(true);
    expect(excluded(secondZero, '2026-12-02T09:30:01.000Z')).toBe(false);
  });

  it('a range is [from, to)', () => {
    const range: Exclusion[] = [{ from: '2026-12-24T00:00:00Z', to: new Date('2026-12-27T00:00:00Z') }];
    expect(excluded(range, '2026-12-24T00:00:00.000Z')).toBe(true);
    expect(excluded(range, '2026-12-26T23:59:59.999Z')).toBe(true);
    expect(excluded(range, '2026-12-27T00:00:00.000Z')).toBe(false);
    expect(excluded(range, '2026-12-23T23:59:59.999Z')).toBe(false);
  });

  it("a calendar matches the date in its zone, else the trigger's zone, else UTC; a missing one excludes nothing", () => {
    const cal: Exclusion[] = [{ calendar: 'h' }];
    // 2026-12-24T23:30Z is the 25th in Berlin, the 24th in UTC.
    const late = '2026-12-24T23:30:00.000Z';
    expect(excluded(cal, late, undefined, { h: { dates: ['2026-12-25'], timezone: 'Europe/Berlin' } })).toBe(
      true,
    );
    expect(excluded(cal, late, undefined, { h: { dates: ['2026-12-25'] } })).toBe(false);
    expect(excluded(cal, late, 'Europe/Berlin', { h: { dates: ['2026-12-25'] } })).toBe(true);
    expect(excluded(cal, late, 'Europe/Berlin', { h: { dates: ['2026-12-25'], timezone: 'UTC' } })).toBe(
      false,
    );
    expect(excluded(cal, late, 'Europe/Berlin', {})).toBe(false);
    expect(dateIn(at(late), 'Asia/Tokyo')).toBe('2026-12-25');
  });

  it("calendars without a zone are read in the trigger's cron zone, also through startAt/endAt bounds", () => {
    const cron = compileTrigger({ cron: '0 9 * * *', timezone: 'Asia/Tokyo' });
    expect(cronZone(cron)).toBe('Asia/Tokyo');
    expect(cronZone(bounded(cron, compileBounds({ startAt: '2026-01-01' }, 'x')))).toBe('Asia/Tokyo');
    expect(cronZone(compileTrigger({ every: '1h' }))).toBeUndefined();
  });

  it('no list (or an empty one) compiles to nothing: nothing to check per fire time', () => {
    expect(compileExclude(undefined, undefined, 'x')).toBeUndefined();
    expect(compileExclude([], undefined, 'x')).toBeUndefined();
    const c = compileExclude([{ calendar: 'a' }, { calendar: 'a' }, { from: 0, to: 1000 }], 'UTC', 'x')!;
    expect(c.calendars).toEqual(['a']);
    expect(c.source).toEqual([
      { calendar: 'a' },
      { calendar: 'a' },
      { from: '1970-01-01T00:00:00.000Z', to: '1970-01-01T00:00:01.000Z' },
    ]);
  });

  it('bad entries are INVALID_ARGUMENT naming the entry and field', () => {
    const bad = (list: unknown, pattern: RegExp) => {
      let error: unknown;
      try {
        compileExclude(list, undefined, 'job "j"');
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(OncelyError);
      expect((error as OncelyError).code).toBe('INVALID_ARGUMENT');
      expect((error as OncelyError).message).toMatch(pattern);
    };
    bad({}, /exclude must be a list/);
    bad([null], /exclude\[0\] must be an object/);
    bad([{ cron: '* * *' }], /job "j": exclude\[0\]: cron "\* \* \*" is invalid/);
    bad([{ from: 5, to: 5 }], /to must be after from/);
    bad([{ from: -1, to: 5 }], /from must be/);
    bad([{ calendar: 'x'.repeat(201) }], /calendar must be 1-200/);
    bad([{ cron: '* * * * *' }, { every: '1d' }], /exclude\[1\] has the fields \{every\}/);
  });
});

describe('history checker: excluded skips', () => {
  const job = 'report';
  const F = Date.parse('2026-12-25T09:00:00Z');
  const skip = { job, from: F, to: F, reason: 'excluded' as const };
  const base = {
    records: [],
    skips: [skip],
    expected: [{ job, fireTime: F }],
    jobs: [{ job, leaseMs: 30_000 }],
  };

  it('borne out only when the fire time matches the trigger’s list (any version of a calendar)', () => {
    const ok = checkHistory({
      ...base,
      exclusions: [{ job, exclude: [{ calendar: 'h' }] }],
      calendars: [
        { id: 'h', dates: ['2026-12-25'] },
        { id: 'h', dates: ['2027-01-01'] },
      ],
    });
    expect([ok.skipped, ok.violations]).toEqual([1, []]);
    const other = checkHistory({ ...base, exclusions: [{ job, exclude: [{ from: F + 1, to: F + 1000 }] }] });
    expect(other.violations.map((v) => v.kind)).toEqual(['unjustified-skip']);
    expect(other.violations[0]!.message).toMatch(/matches no entry of its trigger's exclude list/);
    // A stored schedule's list is its own: the job's list does not bear out its skips.
    const stored = checkHistory({
      ...base,
      skips: [{ ...skip, scheduleId: 's' }],
      expected: [{ job, scheduleId: 's', fireTime: F }],
      exclusions: [{ job, exclude: [{ cron: '0 9 * * *' }] }],
    });
    expect(stored.unjustifiedSkips).toBe(1);
  });
});
