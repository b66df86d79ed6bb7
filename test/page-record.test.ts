import { describe, expect, it } from 'vitest';
import {
  decodeDueValue,
  decodePageRecord,
  encodeDueValue,
  encodePageRecord,
  type PageRecord,
  peekPageRecord,
  runMoveValue,
} from '../src/scheduler/claim/page-record.js';
import { jobOfDueValue } from '../src/scheduler/due/due-scan.js';
import { keys, parseDueEntry } from '../src/scheduler/keys.js';

const F = 1_796_305_788_000;
const DAY = 86_400_000;

describe('page records as stored', () => {
  const record: PageRecord = {
    job: 'report|mail',
    node: 'n1',
    leaseMs: 30_000,
    items: [
      {
        id: 'u0',
        v: 'a.0',
        fireTime: F,
        to: keys.dueEntry(F + DAY, 'u0', 'a.0'),
        kind: 'run',
        source: 'schedule',
      },
      // A jittered entry's next key carries its nominal fire time: kept whole.
      {
        id: 'u|1',
        v: 'a.1',
        fireTime: F,
        at: F + 37_000,
        to: keys.dueEntry(F + DAY, 'u|1', 'a.1', F + DAY + 37_000),
        kind: 'run',
        source: 'misfire',
      },
      {
        id: 'u2',
        v: 'a.2',
        fireTime: F - DAY,
        to: keys.dueEntry(F, 'u2', 'a.2'),
        kind: 'skip',
        source: 'schedule',
        by: { fireTime: F - 2 * DAY, node: 'n2', token: 7 },
      },
      {
        id: 'u3',
        v: 'a.3',
        fireTime: F,
        to: keys.dueEnded('u3', 'a.3'),
        kind: 'settle',
        source: 'schedule',
        reason: 'excluded',
      },
      {
        id: 'u4',
        v: 'a.4',
        fireTime: F,
        to: keys.dueEntry(F + DAY, 'u4', 'a.4'),
        kind: 'run',
        source: 'recover',
        attempt: 2,
      },
    ],
    started: {
      at: F + 5,
      claimedAt: F + 1,
      token: 42,
      won: [0, 1, 4],
      since: { at: F, node: 'n0', token: 40 },
    },
  };

  it('reads back what was written, field for field', () => {
    expect(decodePageRecord(encodePageRecord(record))).toEqual(record);
    const { started: _, ...unstarted } = record;
    expect(decodePageRecord(encodePageRecord(unstarted))).toEqual(unstarted);
    expect(decodePageRecord(encodePageRecord({ ...record, items: [] }))).toEqual({ ...record, items: [] });
  });

  it("leaves out what most items say (the page's fire time, run, schedule, the plain next key)", () => {
    const plain = encodePageRecord({ job: 'j', node: 'n1', leaseMs: 30_000, items: [record.items[0]!] });
    expect(plain).not.toContain('"to"');
    expect(plain).not.toContain('"kind"');
    expect(plain).not.toContain('"source"');
    expect(plain.match(/1796305788000/g)).toHaveLength(1);
  });

  it("an item's next key is left out exactly when it is the plain due entry of its schedule", () => {
    const base = record.items[0]!;
    const n = F + DAY;
    const cases: [string, string, string, boolean][] = [
      // [id, v, to, plain]
      ['u0', 'a.0', keys.dueEntry(n, 'u0', 'a.0'), true],
      ['u|1%', 'a.1', keys.dueEntry(n, 'u|1%', 'a.1'), true],
      ['u0', 'a.0', keys.dueEntry(5, 'u0', 'a.0'), true],
      ['u0', 'a.0', keys.dueEntry(n, 'u0', 'a.0', n + 1), false],
      ['u0', 'a.0', keys.dueEntry(n, 'u1', 'a.0'), false],
      ['u0', 'a.0', keys.dueEntry(n, 'u0', 'a.1'), false],
      ['u0', 'a.0', keys.dueEntry(n, 'u00', 'a.'), false],
      ['u0', 'a.0', keys.dueEnded('u0', 'a.0'), false],
      ['u0', 'a.0', `due|${'x'.repeat(15)}|u0|a.0`, false],
      ['u0', 'a.0', `due|-${String(n).padStart(14, '0')}|u0|a.0`, false],
      ['u0', 'a.0', `due|${String(n).padStart(15, '0')}/u0|a.0`, false],
      ['u0', 'a.0', `due|${String(n).padStart(15, '0')}|u0/a.0`, false],
    ];
    for (const [id, v, to, plain] of cases) {
      const rec: PageRecord = { job: 'j', node: 'n1', leaseMs: 30_000, items: [{ ...base, id, v, to }] };
      const text = encodePageRecord(rec);
      expect(text.includes('"to"'), to).toBe(!plain);
      expect(decodePageRecord(text)).toEqual(rec);
    }
  });

  it('a look at the record reads all of it but its items (ids that spell the items field too)', () => {
    const { items: _, ...header } = record;
    expect(peekPageRecord(encodePageRecord(record))).toEqual(header);
    const tricky = { ...record, job: ',"items":[', items: [{ ...record.items[0]!, id: ',"items":[' }] };
    expect(peekPageRecord(encodePageRecord(tricky))).toEqual({ ...header, job: ',"items":[' });
    const { started: __, ...unstarted } = header;
    expect(peekPageRecord(encodePageRecord({ ...unstarted, items: record.items }))).toEqual(unstarted);
    // Written whole by an earlier version (items before started): read as not started.
    expect(peekPageRecord(JSON.stringify(record))).toEqual(unstarted);
  });

  it('reads a record written whole (before this encoding)', () => {
    expect(decodePageRecord(JSON.stringify(record))).toEqual(record);
  });

  it("a due entry's value leaves out prev.page when it is the entry's page", () => {
    const v = { job: 'j', page: 'p1', prev: { page: 'p1', fireTime: F } };
    expect(encodeDueValue(v)).not.toContain('"page":"p1","fireTime"');
    expect(decodeDueValue(encodeDueValue(v))).toEqual(v);
    const other = { job: 'j', page: 'p2', prev: { page: 'p1', fireTime: F }, left: 3 };
    expect(decodeDueValue(encodeDueValue(other))).toEqual(other);
    expect(decodeDueValue(JSON.stringify(v))).toEqual(v);
    expect(decodeDueValue('{"job":"j"}')).toEqual({ job: 'j' });
  });

  it("a run item's move value is encodeDueValue's text, for any job name and page id", () => {
    for (const job of ['report', 'a"b', 'back\\slash', 'tab\tx', 'ünï', '\u2028', '\ud800']) {
      for (const page of ['p1', 'x"y', 'z\\']) {
        const move = runMoveValue(job, page);
        for (const fireTime of [0, F, Number.MAX_SAFE_INTEGER]) {
          const text = move(fireTime);
          expect(text).toBe(encodeDueValue({ job, page, prev: { page, fireTime } }));
          expect(decodeDueValue(text)).toEqual({ job, page, prev: { page, fireTime } });
          expect(jobOfDueValue(text)).toBe(job);
        }
      }
    }
  });

  it("the job a due entry's value names, for any job name", () => {
    for (const job of ['report', 'a"b', 'back\\slash', 'tab\tx', 'ünï', '"', '\\']) {
      expect(jobOfDueValue(JSON.stringify({ job }))).toBe(job);
      expect(jobOfDueValue(JSON.stringify({ job, page: 'p', prev: { fireTime: F } }))).toBe(job);
      expect(jobOfDueValue(JSON.stringify({ page: 'p', job }))).toBe(job);
    }
  });

  it('due keys read back (escaped ids, jitter, missing parts)', () => {
    expect(parseDueEntry(keys.dueEntry(F, 'u1', 'abc.0'))).toEqual({
      fireTime: F,
      at: F,
      id: 'u1',
      v: 'abc.0',
    });
    expect(parseDueEntry(keys.dueEntry(F, 'u|1%x', 'abc.0', F + 9))).toEqual({
      fireTime: F,
      at: F + 9,
      id: 'u|1%x',
      v: 'abc.0',
    });
    expect(parseDueEntry(keys.dueEntry(5, '', ''))).toEqual({ fireTime: 5, at: 5, id: '', v: '' });
    expect(parseDueEntry('due|001')).toEqual({ fireTime: 1, at: 1, id: '', v: '' });
    expect(parseDueEntry('due|001|x')).toEqual({ fireTime: 1, at: 1, id: 'x', v: '' });
    expect(parseDueEntry('due|001|x|v|002|extra')).toEqual({ fireTime: 2, at: 1, id: 'x', v: 'v' });
  });
});
