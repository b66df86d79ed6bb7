import { describe, expect, it } from 'vitest';
import {
  decodeHistory,
  encodeHistory,
  encodeOutcome,
  type Outcome,
} from '../src/scheduler/finish/history.js';
import { keys, parseHistoryKey } from '../src/scheduler/keys.js';
import type { HistoryEntry } from '../src/scheduler/types.js';

const F = 1_796_305_788_000;

/** Where an entry is stored: keys.history of its occurrence and attempt. */
const keyOf = (e: HistoryEntry) =>
  keys.history(
    { job: e.job, scheduleId: e.scheduleId, fireTime: e.fireTime.getTime(), shard: e.shard },
    e.attempt,
  );

/** A run's outcome in numbers, for the entry `e`. */
const outcomeOf = (e: HistoryEntry): Outcome => ({
  job: e.job,
  scheduleId: e.scheduleId,
  fireTime: e.fireTime.getTime(),
  scheduledAt: (e.scheduledAt ?? e.fireTime).getTime(),
  shard: e.shard,
  node: e.node,
  attempt: e.attempt,
  token: e.token,
  source: e.source,
  status: e.status,
  startedAt: e.startedAt.getTime(),
  finishedAt: e.finishedAt!.getTime(),
  error: e.error,
  output: e.output,
});

describe('history entries as stored', () => {
  const base: HistoryEntry = {
    job: 'report',
    fireTime: new Date(F),
    node: 'n1',
    attempt: 1,
    token: 7,
    source: 'schedule',
    status: 'succeeded',
    startedAt: new Date(F + 3),
    finishedAt: new Date(F + 9),
  };
  const entries: HistoryEntry[] = [
    base,
    { ...base, scheduleId: 'u|1', shard: 2, scheduledAt: new Date(F + 37_000), output: 'ok "quoted"' },
    {
      ...base,
      scheduledAt: new Date(F),
      status: 'failed',
      error: 'Error: x',
      willRetry: true,
      leaseLapsed: true,
    },
    {
      ...base,
      status: 'skipped',
      reason: 'overlap',
      by: { fireTime: new Date(F - 60_000), node: 'n2', token: 3 },
    },
    {
      ...base,
      status: 'skipped',
      reason: 'paused',
      span: { first: new Date(F), last: new Date(F + 120_000), count: 3 },
    },
    { ...base, status: 'running', finishedAt: undefined } as unknown as HistoryEntry,
  ];

  it('reads back every field (scheduledAt: the fire time when it is not stored)', () => {
    for (const e of entries) {
      const back = decodeHistory(encodeHistory(e), keyOf(e));
      const expected = { ...e, scheduledAt: e.scheduledAt ?? e.fireTime };
      for (const k of Object.keys(expected) as (keyof HistoryEntry)[])
        if (expected[k] === undefined) delete expected[k];
      expect(back).toEqual(expected);
    }
  });

  it('stores dates as epoch ms, and scheduledAt only when it is not the fire time', () => {
    const raw = JSON.parse(encodeHistory({ ...base, scheduledAt: new Date(F) }));
    expect(raw).toEqual({ ...base, fireTime: F, startedAt: F + 3, finishedAt: F + 9 });
    expect(JSON.parse(encodeHistory(entries[1]!)).scheduledAt).toBe(F + 37_000);
  });

  it('keeps a field it does not know', () => {
    const odd = { ...base, note: 'kept' } as HistoryEntry;
    expect(JSON.parse(encodeHistory(odd)).note).toBe('kept');
  });

  it("a run's outcome encoded from its numbers reads back as the entry encodeHistory writes, less what its key holds", () => {
    const cases: HistoryEntry[] = [
      base,
      { ...base, scheduledAt: new Date(F) },
      { ...base, scheduleId: 'u|1', shard: 2, scheduledAt: new Date(F + 37_000), output: 'ok "quoted"\n' },
      { ...base, scheduleId: 'u2', status: 'failed', error: 'Error: x "y"' },
      { ...base, source: 'misfire', attempt: 3, token: 99, output: '' },
      // Text with escapes, and characters JSON writes as they are or as \u escapes (a lone surrogate).
      {
        ...base,
        scheduleId: 'ü "x"\\\n\u0001\ud800 😀',
        node: 'nœud\t',
        startedAt: new Date(F + 104),
        finishedAt: new Date(F + 1),
        error: 'Error: a\r\nb',
        output: '{"json":"inside"}',
      },
      { ...base, scheduledAt: new Date(F + 1), shard: 0, token: 2 ** 53 - 1, attempt: 1e6 },
    ];
    for (const e of cases) {
      const text = encodeOutcome(outcomeOf(e));
      const key = keyOf(e);
      // Nothing the key holds is in the value (an empty schedule id aside: its key cannot tell it from none).
      const raw = JSON.parse(text) as Record<string, unknown>;
      for (const field of ['job', 'fireTime', 'shard', 'attempt']) expect(raw[field]).toBeUndefined();
      expect(raw['scheduleId']).toBe(e.scheduleId === '' ? '' : undefined);
      expect(decodeHistory(text, key)).toEqual(decodeHistory(encodeHistory(e), key));
    }
  });

  it('reads a value that holds every field (every other writer, every entry stored before) as it is, even at another key', () => {
    const e: HistoryEntry = { ...base, scheduleId: 'u1', shard: 1, attempt: 2 };
    const full = encodeHistory(e);
    expect(decodeHistory(full, keyOf(e))).toEqual({ ...e, scheduledAt: e.fireTime });
    // The value's own fields win over a key that says otherwise.
    const other = keys.history({ job: 'x', scheduleId: 'y', fireTime: F + 1, shard: 3 }, 9);
    expect(decodeHistory(full, other)).toEqual({ ...e, scheduledAt: e.fireTime });
  });

  it('an empty schedule id, and names with the escaped characters, read back', () => {
    for (const e of [
      { ...base, scheduleId: '' },
      { ...base, job: 'a|b%7C', scheduleId: '%|x', shard: 12, attempt: 10_001 },
      { ...base, scheduleId: 'manual:abc' },
    ] as HistoryEntry[]) {
      const key = keyOf(e);
      expect(parseHistoryKey(key)?.attempt).toBe(e.attempt);
      expect(decodeHistory(encodeOutcome(outcomeOf(e)), key)).toEqual({ ...e, scheduledAt: e.fireTime });
    }
  });

  it('a value without its occurrence at a key that names none is an INTERNAL error, not an entry of nothing', () => {
    const text = encodeOutcome(outcomeOf(base));
    expect(() => decodeHistory(text, 'hist|broken')).toThrow(/names no occurrence/);
    expect(parseHistoryKey('due|001|x|v')).toBeUndefined();
    expect(parseHistoryKey(`hist|j|${'x'.repeat(15)}||| 0001`)).toBeUndefined();
  });

  it('writes numbers as JSON does: store times with fractions (estimated from a monotonic clock), large and tiny ones', () => {
    for (const v of [1_796_529_120_104.8855, 0.1 + 0.2, 1e21, -0, 5e-7, 2 ** 53 + 2]) {
      const o = {
        job: 'j',
        scheduleId: undefined,
        fireTime: F,
        scheduledAt: F,
        shard: undefined,
        node: 'n',
        attempt: 1,
        token: 1,
        source: 'schedule' as const,
        status: 'succeeded' as const,
        startedAt: v,
        finishedAt: v * 2,
        error: undefined,
        output: undefined,
      };
      const { job: _j, scheduleId: _s, fireTime: _f, scheduledAt: _a, shard: _h, attempt: _t, ...fields } = o;
      expect(encodeOutcome(o)).toBe(JSON.stringify(fields));
    }
  });
});
