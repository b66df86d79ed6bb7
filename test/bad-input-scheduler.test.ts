/**
 * Bad input to the scheduler, catalogued (docs/faults.md, "Bad input"): createScheduler and
 * define() options, triggers (cron fields, time zones, intervals, instants), durations, shards,
 * job names, the control calls, fireTimes, and stored schedules. Each case asserts the
 * `OncelyError` code and that the message names the field and value and what is allowed. Inputs
 * that look wrong but are not errors (a DST gap, a 6-field cron, `|` in a name, duplicate ids in
 * one upsert) are here too, with what they do instead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createScheduler,
  fireTimes,
  type JobOptions,
  MemoryStore,
  type Scheduler,
  type StoredSchedule,
} from '../src/index.js';
import { keys } from '../src/scheduler/keys.js';
import { invalid } from './fixtures/bad-input.js';
import { recordEvents } from './harness/events.js';

const store = new MemoryStore();
let scheduler: Scheduler;
const noop = async () => {};

beforeAll(() => {
  scheduler = createScheduler({ store, node: 'bad-input' });
});
afterAll(async () => {
  await store.close();
});

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

describe('createScheduler options', () => {
  it.each<[string, Record<string, unknown>, RegExp[]]>([
    [
      'unknown option concurency',
      { concurency: 4 },
      [/unknown scheduler option "concurency" \(did you mean "concurrency"\?\); allowed: store, node/],
    ],
    ['concurrency 0', { concurrency: 0 }, [/concurrency must be a whole number from 1 to 10000; got 0/]],
    [
      'concurrency 1.5',
      { concurrency: 1.5 },
      [/concurrency must be a whole number from 1 to 10000; got 1.5/],
    ],
    ['pollInterval 0s', { pollInterval: '0s' }, [/pollInterval must be greater than 0/]],
    ['stopTimeout -5s', { stopTimeout: '-5s' }, [/stopTimeout "-5s" is not a duration/]],
    ['node with a newline', { node: 'a\nb' }, [/node must be 1-200 printable characters/]],
  ])('createScheduler: %s', async (_title, options, patterns) => {
    await invalid(() => createScheduler({ store, ...options }), ...patterns);
  });

  it('createScheduler: no store', async () => {
    await invalid(() => createScheduler({} as never), /createScheduler needs \{ store \}/);
  });
});

/** [title, options, what the message must say] — every case names the job "j" and the field. */
const DEFINE: [string, unknown, RegExp[]][] = [
  [
    'unknown option retires',
    { every: '1m', retires: 3 },
    [/job "j": retires is not a job option \(did you mean "retries"\?\); known: cron, every/],
  ],
  ['options not an object', 'every minute', [/job "j": options must be an object/]],
  [
    'two triggers: cron and every',
    { cron: '* * * * *', every: '1m' },
    [/only one of cron, every or at; got cron and every/],
  ],
  ['two triggers: cron and at', { cron: '* * * * *', at: '2030-01-01T00:00:00Z' }, [/got cron and at/]],
  // cron fields
  [
    'cron with 4 fields',
    { cron: '* * * *' },
    [
      /cron "\* \* \* \*" is invalid: it has 4 fields; use 5 \(minute hour day-of-month month day-of-week\) or 6 \(second first\)/,
    ],
  ],
  ['cron with 7 fields (a year)', { cron: '0 0 0 * * * 2030' }, [/it has 7 fields; use 5/]],
  ['cron minute 60', { cron: '60 * * * *' }, [/minute 60 is out of range \(0-59\)/]],
  ['cron hour 24', { cron: '0 24 * * *' }, [/hour 24 is out of range \(0-23\)/]],
  ['cron day-of-month 32', { cron: '0 0 32 * *' }, [/day-of-month 32 is out of range \(1-31\)/]],
  ['cron day-of-month 0', { cron: '0 0 0 * *' }, [/day-of-month 0 is out of range \(1-31\)/]],
  ['cron month 13', { cron: '0 0 1 13 *' }, [/month 13 is out of range \(1-12\)/]],
  ['cron day-of-week 8', { cron: '0 0 * * 8' }, [/day-of-week 8 is out of range \(0-7\)/]],
  ['cron second 60 (6 fields)', { cron: '60 * * * * *' }, [/second 60 is out of range \(0-59\)/]],
  [
    'cron out-of-range value inside a list and range',
    { cron: '0 1,2-25 * * *' },
    [/hour 25 is out of range/],
  ],
  [
    'cron day name misspelt (MON-FRY)',
    { cron: '0 9 * * MON-FRY' },
    [
      /cron "0 9 \* \* MON-FRY" is invalid: day-of-week "FRY" is not a day of the week: use 0-7 \(0 and 7 are Sunday\) or SUN-SAT \(did you mean "FRI"\?\)$/,
    ],
  ],
  [
    'cron month name misspelt',
    { cron: '0 9 1 JAM *' },
    [/month "JAM" is not a month: use 1-12 or JAN-DEC \(did you mean "JAN"\?\)/],
  ],
  ['cron letters in the minute', { cron: 'x 9 * * *' }, [/minute "x" is not a number: use 0-59/]],
  ['cron step 0', { cron: '*/0 * * * *' }, [/cron "\*\/0 \* \* \* \*" is invalid: .*stepping: 0/]],
  ['cron reversed range 5-1', { cron: '0 5-1 * * *' }, [/is invalid: .*5-1/]],
  [
    'cron that never fires (February 30th)',
    { cron: '0 0 30 2 *' },
    [/cron "0 0 30 2 \*" never fires \(no date matches every field/],
  ],
  ['cron not a string', { cron: 5 }, [/job "j": cron must be a pattern string such as '0 9 \* \* \*'/]],
  ['cron blank', { cron: '  ' }, [/job "j": cron must be a pattern string/]],
  // time zones
  [
    'time zone Mars/Olympus',
    { cron: '0 9 * * *', timezone: 'Mars/Olympus' },
    [/job "j": timezone "Mars\/Olympus" is not a known IANA time zone \(e\.g\. 'UTC', 'Europe\/Berlin'/],
  ],
  [
    'time zone as an offset +02:00',
    { cron: '0 9 * * *', timezone: '+02:00' },
    [/timezone "\+02:00" is not a known IANA time zone/],
  ],
  [
    'time zone empty',
    { cron: '0 9 * * *', timezone: '' },
    [/job "j": timezone must be an IANA time zone name such as 'Europe\/Berlin'/],
  ],
  [
    'time zone on an every trigger',
    { every: '1m', timezone: 'UTC' },
    [/job "j": timezone applies to cron triggers only/],
  ],
  // intervals and instants
  [
    'every 1 fortnight',
    { every: '1 fortnight' },
    [/job "j": every "1 fortnight" is not a duration: use milliseconds \(250\), '250ms', '30s'/],
  ],
  ['every -5s', { every: '-5s' }, [/job "j": every "-5s" is not a duration/]],
  ['every 0s', { every: '0s' }, [/job "j": every must be greater than 0\b.*; got "0s"/]],
  [
    'every 0.4 (rounds to 0 ms)',
    { every: 0.4 },
    [/every must be greater than 0 \(at least 1 ms once rounded\); got 0.4/],
  ],
  [
    'every NaN',
    { every: Number.NaN },
    [/every must be a finite, non-negative number of milliseconds; got NaN/],
  ],
  [
    'every Infinity',
    { every: Number.POSITIVE_INFINITY },
    [/every must be a finite, non-negative number of milliseconds; got Infinity/],
  ],
  ['every P1M (calendar months)', { every: 'P1M' }, [/every "P1M" is not a duration: .*no years or months/]],
  [
    'every 200000000d (past any date)',
    { every: '200000000d' },
    [/job "j": every must be at most 100 years \(3153600000000 ms\); got 17280000000000000 ms/],
  ],
  [
    'at tomorrow',
    { at: 'tomorrow' },
    [/job "j": at must be a Date, an ISO-8601 string or epoch milliseconds; got "tomorrow"/],
  ],
  ['at an invalid Date', { at: new Date('nope') }, [/job "j": at must be a Date/]],
  [
    'at in epoch microseconds',
    { at: Date.UTC(2030, 0, 1) * 1000 },
    [/at must be from 1970-01-01 to 9999-12-31 .*\(epoch microseconds\? use milliseconds\)/],
  ],
  [
    'at before 1970',
    { at: -1 },
    [/at must be from 1970-01-01 to 9999-12-31 \(epoch ms 0 to 253402300799999\); got -1/],
  ],
  // durations and limits
  [
    'lockAtLeastFor above lockAtMostFor',
    { every: '1m', lockAtMostFor: '1s', lockAtLeastFor: '2s' },
    [/job "j": lockAtLeastFor \(2000 ms\) must not exceed lockAtMostFor \(1000 ms\)/],
  ],
  [
    'lockAtMostFor 0s',
    { every: '1m', lockAtMostFor: '0s' },
    [/job "j": lockAtMostFor must be greater than 0/],
  ],
  [
    'lockAtMostFor over 100 years',
    { every: '1m', lockAtMostFor: '1000000d' },
    [/job "j": lockAtMostFor must be at most 100 years \(3153600000000 ms\); got 86400000000000 ms/],
  ],
  ['timeout 0', { every: '1m', timeout: 0 }, [/job "j": timeout must be greater than 0/]],
  ['retryDelay soon', { every: '1m', retryDelay: 'soon' }, [/job "j": retryDelay "soon" is not a duration/]],
  [
    'misfireThreshold 0',
    { every: '1m', misfireThreshold: 0 },
    [/job "j": misfireThreshold must be greater than 0/],
  ],
  [
    'retries 1.5',
    { every: '1m', retries: 1.5 },
    [/job "j": retries must be a whole number from 0 to 100; got 1.5/],
  ],
  ['retries 101', { every: '1m', retries: 101 }, [/retries must be a whole number from 0 to 100; got 101/]],
  [
    'catchUpLimit 0',
    { every: '1m', misfire: 'catch-up', catchUpLimit: 0 },
    [/job "j": catchUpLimit must be a whole number from 1 to 10000; got 0/],
  ],
  // shards and policies
  ['shards 0', { every: '1m', shards: 0 }, [/job "j": shards must be a whole number from 1 to 1000; got 0/]],
  ['shards -1', { every: '1m', shards: -1 }, [/shards must be a whole number from 1 to 1000; got -1/]],
  ['shards 1.5', { every: '1m', shards: 1.5 }, [/shards must be a whole number from 1 to 1000; got 1.5/]],
  ['shards 1001', { every: '1m', shards: 1001 }, [/shards must be a whole number from 1 to 1000; got 1001/]],
  [
    'shards []',
    { every: '1m', shards: [] },
    [/job "j": shards must be a shard count \(1-1000\) or a non-empty list of shard parameters \(strings\)/],
  ],
  [
    'shards [1, 2] (not strings)',
    { every: '1m', shards: [1, 2] },
    [/shards must be a shard count \(1-1000\) or a non-empty list of shard parameters \(strings\)/],
  ],
  [
    'overlap sometimes',
    { every: '1m', overlap: 'sometimes' },
    [/job "j": overlap must be one of 'skip', 'queue', 'queue-all', 'replace', 'allow'; got "sometimes"/],
  ],
  [
    'misfire retry',
    { every: '1m', misfire: 'retry' },
    [/job "j": misfire must be one of 'skip', 'run-once', 'catch-up'; got "retry"/],
  ],
  ['recover "yes"', { every: '1m', recover: 'yes' }, [/job "j": recover must be true or false/]],
];

describe('define(name, options): bad options', () => {
  it.each(DEFINE)('define: %s', async (_title, options, patterns) => {
    await invalid(() => scheduler.define('j', options as JobOptions, noop), ...patterns);
  });

  it('define: no handler', async () => {
    await invalid(
      () => scheduler.define('j', { every: '1m' }, undefined as never),
      /job "j": handler must be a function/,
    );
  });

  it('define: the same name twice on one scheduler', async () => {
    scheduler.define('twice', { every: '1h' }, noop);
    await invalid(
      () => scheduler.define('twice', { every: '1h' }, noop),
      /job "twice" is already defined on this scheduler/,
    );
  });
});

describe('define(name, options): bad names', () => {
  it.each<[string, unknown, RegExp]>([
    ['empty name', '', /job name must be a non-empty string/],
    ['whitespace-only name', '   ', /job name must be a non-empty string/],
    ['name not a string (42)', 42, /job name must be a non-empty string/],
    [
      '256-character name',
      'x'.repeat(256),
      /job name is 256 characters long as stored \('\|' and '%' count 3\); at most 255 are allowed/,
    ],
    ["86 '|' (258 characters as stored)", '|'.repeat(86), /job name is 258 characters long as stored/],
    ['name with a newline', 'a\nb', /job name "a\\nb" must not contain control characters/],
    ['name with NUL', 'a\u0000b', /job name "a\\u0000b" must not contain control characters/],
    ['name with DEL (U+007F)', 'a\u007fb', /must not contain control characters/],
    [
      'name with a lone surrogate',
      'a\ud800b',
      /job name contains a lone UTF-16 surrogate; use well-formed Unicode text/,
    ],
  ])('name: %s', async (_title, name, pattern) => {
    await invalid(() => scheduler.define(name as string, { every: '1m' }, noop), pattern);
  });

  it("name: '|' and '%' are not reserved: escaped in store keys, so 'a|b' and 'a%7Cb' stay apart", async () => {
    expect(() => scheduler.define('a|b', { every: '1h' }, noop)).not.toThrow();
    expect(keys.job('a|b')).not.toBe(keys.job('a%7Cb'));
    const own = createScheduler({ store: new MemoryStore(), node: 'pipes' });
    await own.schedules.upsert([
      { id: 'x|y', job: 'a|b', every: '1h', data: 'pipe' },
      { id: 'x%7Cy', job: 'a%7Cb', every: '1h', data: 'escaped' },
    ]);
    expect((await own.schedules.get('x|y'))?.data).toBe('pipe');
    expect((await own.schedules.get('x%7Cy'))?.data).toBe('escaped');
    expect((await own.schedules.list({ job: 'a|b' })).map((s) => s.id)).toEqual(['x|y']);
    expect((await own.schedules.list({ job: 'a%7Cb' })).map((s) => s.id)).toEqual(['x%7Cy']);
  });
});

describe('inputs that are not errors', () => {
  it('cron with 6 fields: accepted, the first field is seconds', () => {
    expect(iso(fireTimes({ cron: '*/20 * * * * *' }, { after: Date.UTC(2026, 0, 1), count: 3 }))).toEqual([
      '2026-01-01T00:00:20.000Z',
      '2026-01-01T00:00:40.000Z',
      '2026-01-01T00:01:00.000Z',
    ]);
  });

  it('cron 02:30 on a spring-forward day (Europe/Berlin, 2026-03-29): no error; fires once, at 03:00 CEST', () => {
    const trigger = { cron: '30 2 * * *', timezone: 'Europe/Berlin' };
    expect(iso(fireTimes(trigger, { after: new Date('2026-03-28T12:00:00Z'), count: 2 }))).toEqual([
      '2026-03-29T01:00:00.000Z', // 03:00 CEST: right after the gap
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
    expect(() => scheduler.define('dst-gap', trigger, noop)).not.toThrow();
  });

  it('cron 02:30 on a fall-back day (Europe/Berlin, 2026-10-25): no error; fires once, the first 02:30', () => {
    const trigger = { cron: '30 2 * * *', timezone: 'Europe/Berlin' };
    expect(iso(fireTimes(trigger, { after: new Date('2026-10-24T12:00:00Z'), count: 2 }))).toEqual([
      '2026-10-25T00:30:00.000Z', // 02:30 CEST; the second 02:30 (CET, 01:30Z) does not fire
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  it("time zone in the wrong case ('europe/berlin'): accepted, same fire times as 'Europe/Berlin'", () => {
    const options = { after: Date.UTC(2026, 2, 1), count: 3 };
    expect(iso(fireTimes({ cron: '0 9 * * *', timezone: 'europe/berlin' }, options))).toEqual(
      iso(fireTimes({ cron: '0 9 * * *', timezone: 'Europe/Berlin' }, options)),
    );
  });

  it('at in the past: accepted, never fires', () => {
    expect(fireTimes({ at: '2020-01-01T00:00:00Z' }, { after: Date.now(), count: 1 })).toEqual([]);
    expect(() => scheduler.define('past', { at: '2020-01-01T00:00:00Z' }, noop)).not.toThrow();
  });

  it("timeout '30d' (over setTimeout's 24.8-day limit) is honoured, not fired at once", async () => {
    const own = createScheduler({ store: new MemoryStore(), node: 'long-timeout', pollInterval: '50ms' });
    const events = recordEvents(own);
    own.define('long', { timeout: '30d' }, async (ctx) => {
      await new Promise((resolve) => setTimeout(resolve, 200));
      return ctx.signal.aborted ? 'aborted' : 'finished';
    });
    await own.start();
    try {
      const done = new Promise<void>((resolve) => {
        own.on('succeeded', () => resolve());
        own.on('failed', () => resolve());
      });
      await own.trigger('long');
      await done;
      expect(events.failed.map((e) => String(e.error))).toEqual([]);
      expect(events.succeeded).toHaveLength(1);
      const [entry] = await own.history({ job: 'long' });
      expect(entry).toMatchObject({ status: 'succeeded', output: 'finished' });
    } finally {
      await own.stop();
    }
  });
});

describe('control calls and reads', () => {
  it.each<[string, () => unknown, RegExp[]]>([
    ["trigger('')", () => scheduler.trigger(''), [/job name must be a non-empty string/]],
    [
      'trigger data with a BigInt',
      () => scheduler.trigger('twice', { data: { n: 1n } }),
      [/trigger\("twice"\) data must be JSON-serialisable: Do not know how to serialize a BigInt/],
    ],
    [
      'trigger data with a function',
      () => scheduler.trigger('twice', { data: { send: () => 1 } }),
      [/trigger\("twice"\) data: "send" is a function, which JSON would drop; pass plain data/],
    ],
    [
      'trigger unknown option dta',
      () => scheduler.trigger('twice', { dta: 1 } as never),
      [/unknown trigger\("twice"\) option "dta" \(did you mean "data"\?\); allowed: data/],
    ],
    [
      'pause a name with a tab',
      () => scheduler.pause('a\tb'),
      [/job name "a\\tb" must not contain control characters/],
    ],
    [
      'history unknown option jobb',
      () => scheduler.history({ jobb: 'x' } as never),
      [/unknown history option "jobb" \(did you mean "job"\?\); allowed: job, limit, before/],
    ],
    ["history job ''", () => scheduler.history({ job: '' }), [/job name must be a non-empty string/]],
    [
      'history limit 0',
      () => scheduler.history({ limit: 0 }),
      [/history limit must be a whole number from 1; got 0/],
    ],
    [
      'history before yesterday',
      () => scheduler.history({ before: 'yesterday' }),
      [/history before must be a Date, epoch ms, or a cursor from historyCursor\(\)/],
    ],
    [
      'fireTimes without options',
      () => fireTimes({ every: '1s' }, undefined as never),
      [/fireTimes takes options \{ after: Date \| epoch ms, count \}/],
    ],
    [
      'fireTimes count 10001',
      () => fireTimes({ every: '1s' }, { after: 0, count: 10_001 }),
      [/fireTimes: count must be a whole number from 1 to 10000; got 10001/],
    ],
    [
      'fireTimes after an invalid Date',
      () => fireTimes({ every: '1s' }, { after: new Date('x'), count: 1 }),
      [/fireTimes: after must be a valid Date or epoch ms/],
    ],
    [
      'fireTimes with no trigger',
      () => fireTimes({} as never, { after: 0, count: 1 }),
      [/fireTimes: give one of cron, every or at/],
    ],
  ])('%s', async (_title, action, patterns) => {
    await invalid(action, ...patterns);
  });
});

describe('stored schedules', () => {
  const ok = (id: string): StoredSchedule => ({ id, job: 'report', cron: '0 9 * * *' });

  it('upsert: one bad entry among three names its index and field, and nothing is written', async () => {
    const before = await scheduler.schedules.count();
    await invalid(
      () => scheduler.schedules.upsert([ok('s-1'), ok('s-2'), { id: 's-3', job: 'report', every: 'soon' }]),
      /schedules\.upsert: entry 2: every: schedule "s-3": every "soon" is not a duration/,
    );
    expect(await scheduler.schedules.count()).toBe(before);
  });

  it.each<[string, unknown, RegExp[]]>([
    [
      'unknown field crn',
      { id: 's', job: 'report', crn: '0 9 * * *' },
      [
        /entry 0: crn: unknown field \(did you mean "cron"\?\); allowed: id, job, cron, every, at, timezone, jitter, startAt, endAt, maxRuns, exclude, data/,
      ],
    ],
    [
      'maxRuns 0',
      { id: 's', job: 'report', every: '1h', maxRuns: 0 },
      [/entry 0: maxRuns: schedule "s": maxRuns must be a whole number from 1 to 1000000000; got 0/],
    ],
    [
      'endAt before startAt',
      { id: 's', job: 'report', every: '1h', startAt: '2030-02-01T00:00:00Z', endAt: '2030-01-01T00:00:00Z' },
      [
        /entry 0: endAt: schedule "s": endAt \(2030-01-01T00:00:00\.000Z\) must be after startAt \(2030-02-01T00:00:00\.000Z\)/,
      ],
    ],
    [
      'id with a newline',
      { id: 'a\nb', job: 'report', every: '1h' },
      [/entry 0: id: id must be 1-200 printable characters/],
    ],
    [
      'id of 201 characters',
      { id: 'x'.repeat(201), job: 'report', every: '1h' },
      [/entry 0: id: id must be 1-200 printable characters \('\|' and '%' count 3\)/],
    ],
    [
      'entry null',
      null,
      [/entry 0: entry must be an object \{ id, job, cron \| every \| at, timezone\?, jitter\?, data\? \}/],
    ],
    [
      'no trigger',
      { id: 's', job: 'report' },
      [/entry 0: cron \| every \| at: schedule "s": give one of cron, every or at/],
    ],
    [
      'a cron that never fires',
      { id: 's', job: 'report', cron: '0 0 31 4 *' },
      [/entry 0: cron: schedule "s": cron "0 0 31 4 \*" never fires/],
    ],
    [
      'bad time zone',
      { id: 's', job: 'report', cron: '0 9 * * *', timezone: 'Asia/Atlantis' },
      [/entry 0: cron: schedule "s": timezone "Asia\/Atlantis" is not a known IANA time zone/],
    ],
    [
      'data with a function',
      { id: 's', job: 'report', every: '1h', data: { run: () => 1 } },
      [/entry 0: data: "run" is a function, which JSON would drop/],
    ],
    [
      'data with a cycle',
      (() => {
        const data: Record<string, unknown> = {};
        data.self = data;
        return { id: 's', job: 'report', every: '1h', data };
      })(),
      [/entry 0: data: must be JSON-serialisable: Converting circular structure to JSON/],
    ],
  ])('upsert: %s', async (_title, entry, patterns) => {
    const before = await scheduler.schedules.count();
    await invalid(() => scheduler.schedules.upsert(entry as StoredSchedule), ...patterns);
    expect(await scheduler.schedules.count()).toBe(before);
  });

  it('upsert: the same id twice in one call is not an error: the later entry wins', async () => {
    const before = await scheduler.schedules.count();
    await scheduler.schedules.upsert([
      { id: 'dup', job: 'report', every: '1h', data: 1 },
      { id: 'dup', job: 'report', every: '2h', data: 2 },
    ]);
    expect(await scheduler.schedules.get('dup')).toEqual({ id: 'dup', job: 'report', every: '2h', data: 2 });
    expect(await scheduler.schedules.count()).toBe(before + 1);
    await scheduler.schedules.remove('dup');
  });

  it.each<[string, () => unknown, RegExp[]]>([
    [
      'list limit 1001',
      () => scheduler.schedules.list({ limit: 1001 }),
      [/schedules\.list: limit must be an integer from 1 to 1000/],
    ],
    [
      'list unknown option lmit',
      () => scheduler.schedules.list({ lmit: 5 } as never),
      [/unknown schedules\.list option "lmit" \(did you mean "limit"\?\); allowed: job, after, limit/],
    ],
    [
      'count unknown option jbo',
      () => scheduler.schedules.count({ jbo: 'x' } as never),
      [/unknown schedules\.count option "jbo" \(did you mean "job"\?\)/],
    ],
    ["get('')", () => scheduler.schedules.get(''), [/id must be 1-200 printable characters/]],
  ])('%s', async (_title, action, patterns) => {
    await invalid(action, ...patterns);
  });
});
