/**
 * Stored schedules with large `data` on the dashboard (issue 29, finding 3): records written before
 * the 64 KiB cap, or straight through the store, may hold megabytes. The list pages and the list
 * API are built from bounded previews of `data`; one schedule's own API returns it whole.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { topLevelMembers } from '../src/dashboard/json-members.js';
import { scheduleRow } from '../src/dashboard/schedule-rows.js';
import type { Dashboard } from '../src/dashboard/server.js';
import { keys } from '../src/scheduler/keys.js';
import { type Cluster, dashboardFor, startCluster } from './fixtures/dashboard/cluster.js';

const JOB = 'nightly-report';
const MB = 1024 * 1024;
/** The list API's bound on a schedule's data JSON, and the preview's length (docs/dashboard.md). */
const INLINE = 4096;
const PREVIEW = 200;

let cluster: Cluster;
let dashboard: Dashboard;

async function get(path: string) {
  const res = await fetch(dashboard.url + path, { redirect: 'manual' });
  const text = await res.text();
  return { res, text, json: () => JSON.parse(text) as unknown };
}

/** `get(path)`, and the longest text JSON.parse was given meanwhile (in this process: the server's). */
async function getParsing(path: string) {
  const parse = vi.spyOn(JSON, 'parse');
  try {
    const res = await fetch(dashboard.url + path, { redirect: 'manual' });
    const text = await res.text();
    const longest = Math.max(0, ...parse.mock.calls.map(([t]) => String(t).length));
    return { res, text, longest };
  } finally {
    parse.mockRestore();
  }
}

/** A stored schedule written straight into the store, past the upsert's size checks. */
async function putRaw(id: string, record: string): Promise<void> {
  await cluster.store.apply([
    { op: 'put', key: keys.schedule(id), value: record },
    { op: 'put', key: keys.scheduleOfJob(JOB, id), value: '' },
  ]);
}

beforeAll(async () => {
  cluster = await startCluster('memory:');
  // Three records of ~3 MB each, as oncely writes them (id, job, trigger, data, v)…
  for (let i = 0; i < 3; i++) {
    const data = { blob: 'x'.repeat(3 * MB), n: i };
    await putRaw(
      `big-${i}`,
      `{"id":"big-${i}","job":"${JOB}","cron":"0 3 * * *","data":${JSON.stringify(data)},"v":"a.${i}"}`,
    );
  }
  // …one written by something else: data first, nested, spaced, strings holding braces and quotes.
  const odd = { list: Array.from({ length: 40_000 }, (_, i) => ({ s: `}]"{[\\${i}`, i })) };
  await putRaw(
    'big-odd',
    `{ "data" : ${JSON.stringify(odd, null, 1)} , "id":"big-odd","every":"1d", "job":"${JOB}", "v":"b"}`,
  );
  // Data JSON of exactly the bound (whole) and one character over it (a preview).
  await cluster.scheduler.schedules.upsert([
    { id: 'edge-at', job: JOB, every: '1d', data: 'y'.repeat(INLINE - 2) },
    { id: 'edge-over', job: JOB, every: '1d', data: 'y'.repeat(INLINE - 1) },
    { id: 'small', job: JOB, every: '1d', data: { user: 1 } },
  ]);
  dashboard = await dashboardFor(cluster);
}, 60_000);

afterAll(async () => {
  await dashboard?.close();
  await cluster?.close();
});

describe('large stored data', () => {
  it('GET /api/schedules gives a bounded preview and dataTruncated for data over 4,096 characters', async () => {
    for (const path of [`/api/schedules?job=${JOB}&limit=500`, '/api/schedules?limit=500']) {
      const { res, text, longest } = await getParsing(path);
      const json = () => JSON.parse(text) as unknown;
      expect(res.status, path).toBe(200);
      expect(longest, path).toBeLessThanOrEqual(INLINE);
      // Four records of megabytes used to come back whole (60 × 5 MB: 315 MB in one response).
      expect(text.length, path).toBeLessThan(32 * 1024);
      const rows = json() as Array<Record<string, unknown>>;
      const byId = new Map(rows.map((r) => [r.id, r]));
      expect([...byId.keys()].sort()).toEqual([
        'big-0',
        'big-1',
        'big-2',
        'big-odd',
        'edge-at',
        'edge-over',
        'small',
      ]);
      expect(byId.get('big-1')).toMatchObject({
        id: 'big-1',
        job: JOB,
        trigger: { cron: '0 3 * * *' },
        data: null,
        dataTruncated: true,
        dataLength: JSON.stringify({ blob: 'x'.repeat(3 * MB), n: 1 }).length,
      });
      const preview = byId.get('big-1')!.dataPreview as string;
      expect(preview).toHaveLength(PREVIEW);
      expect(preview.startsWith('{"blob":"xxxx')).toBe(true);
      expect(byId.get('big-odd')).toMatchObject({
        id: 'big-odd',
        job: JOB,
        trigger: { every: '1d' },
        data: null,
        dataTruncated: true,
      });
      expect((byId.get('big-odd')!.dataPreview as string).startsWith('{\n "list": [')).toBe(true);
      expect(byId.get('edge-at')).toMatchObject({ data: 'y'.repeat(INLINE - 2) });
      expect(byId.get('edge-at')).not.toHaveProperty('dataTruncated');
      expect(byId.get('edge-over')).toMatchObject({
        data: null,
        dataTruncated: true,
        dataLength: INLINE + 1,
      });
      expect(byId.get('small')).toEqual({
        id: 'small',
        job: JOB,
        trigger: { every: '1d' },
        nextFireTime: expect.any(String),
        data: { user: 1 },
      });
    }
  });

  it('the job page shows 80 characters of each, without parsing whole records', async () => {
    const { res, text, longest } = await getParsing(`/jobs/${JOB}`);
    expect(res.status).toBe(200);
    expect(text.length).toBeLessThan(64 * 1024);
    // Each 3 MB record used to be parsed whole (and its data serialized again) for 80 characters.
    expect(longest).toBeLessThanOrEqual(INLINE);
    expect(text.match(/<tr data-schedule=/g)).toHaveLength(7);
    expect(text).toContain(`{&quot;blob&quot;:&quot;${'x'.repeat(40)}`);
    expect(text).not.toContain('x'.repeat(200));
  });

  it('GET /api/schedule?id= returns one schedule whole', async () => {
    const { res, json } = await get('/api/schedule?id=big-2');
    expect(res.status).toBe(200);
    const one = json() as { id: string; data: { blob: string; n: number }; dataTruncated?: boolean };
    expect(one.id).toBe('big-2');
    expect(one.data.blob).toHaveLength(3 * MB);
    expect(one.data.n).toBe(2);
    expect(one).not.toHaveProperty('dataTruncated');
    expect((await get('/api/schedule?id=nope')).res.status).toBe(404);
    expect((await get('/api/schedule')).res.status).toBe(400);
  });
});

describe('reading a record member by member', () => {
  const pad = Array.from({ length: 1_500 }, (_, i) => i); // > 4,096 characters of JSON, not a string
  const records: Record<string, unknown>[] = [
    { id: 'a', job: 'j', cron: '0 3 * * *', data: { s: 'x'.repeat(3_000) }, pad, v: '1' },
    { v: '2', data: ['}', ']', '"', '\\', '\\"', { '{': '[' }], id: 'b\\"}', job: 'j"{', every: 1000, pad },
    { id: 'c', job: 'j', at: 1_900_000_000_000, data: null, pad, n: -1.5e3, t: true, f: false, z: null },
    { id: 'd', job: 'j', every: '1d', pad, data: 'é😀'.repeat(1_000) },
  ];
  const expected = (r: Record<string, unknown>) => {
    const { v: _v, ...rest } = r;
    return rest;
  };

  it('gives what JSON.parse gives, for compact and spaced texts alike', () => {
    for (const r of records)
      for (const text of [
        JSON.stringify(r),
        JSON.stringify(r, null, 2),
        ` ${JSON.stringify(r, null, '\t')}\n`,
      ]) {
        expect(text.length).toBeGreaterThan(INLINE);
        expect(scheduleRow(text)).toEqual({ schedule: expected(r) });
      }
  });

  it('previews data over the bound without cutting a surrogate pair, and cuts other long strings', () => {
    const data = '😀'.repeat(3_000);
    const row = scheduleRow(JSON.stringify({ id: 'e', job: 'j', every: '1d', data, v: '1' }));
    expect(row.dataPreview!.length).toBe(JSON.stringify(data).length);
    expect(row.dataPreview!.text).toBe(`"${'😀'.repeat(99)}`); // the 200th character would be half of one
    expect(row.schedule).toEqual({ id: 'e', job: 'j', every: '1d' });
    const cron = `0 ${'0,'.repeat(5_000)}0 * * *`;
    const old = scheduleRow(JSON.stringify({ id: 'f', job: 'j', cron, v: '1' }));
    expect(old.schedule.cron).toBe(`${cron.slice(0, PREVIEW)}…`);
  });

  it('finds no members in what is not one JSON object', () => {
    for (const bad of [
      '',
      '[1]',
      '{"a":1',
      '{"a" 1}',
      '{"a":"x}',
      '{"a":1,}',
      '{"a":[1}',
      '{"a":1} x',
      '{a:1}',
      '{"a":}',
    ])
      expect(topLevelMembers(bad), bad).toBeUndefined();
    expect(topLevelMembers(' { } ')).toEqual(new Map());
    const text = '{"a":1,"a":{"b":"}"}}';
    const a = topLevelMembers(text)!.get('a')!;
    expect(text.slice(a.start, a.end)).toBe('{"b":"}"}');
  });
});
