import { describe, expect, it } from 'vitest';
import {
  decodeDueValue,
  decodePageRecord,
  encodeDueValue,
  encodePageRecord,
  type PageRecord,
} from '../src/scheduler/claim/page-record.js';
import { keys } from '../src/scheduler/keys.js';

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
});
