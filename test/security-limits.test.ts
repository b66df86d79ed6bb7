/**
 * Documented size limits on what a caller can store (issue 29, finding 3): a stored schedule's
 * cron (1 KiB), time zone (64), duration text (64) and whole record (64 KiB) are checked at
 * upsert, before croner or the store sees them, with an `INVALID_ARGUMENT` that names the limit in
 * a short message; and a bulk upsert lets the event loop turn while it validates. Before: a 1 MB
 * cron was accepted (a second of croner), a 10 MB one refused with a 10,000,153-character message,
 * 10 MB of data stored, and a 1,000,000-entry upsert held the event loop for 17 s.
 */
import { describe, expect, it } from 'vitest';
import { createScheduler, fireTimes, openStore } from '../src/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { refused } from './harness/refused.js';

async function scheduler() {
  const store = await openStore('memory:');
  return createScheduler({ store });
}

const base = { id: 'u1', job: 'report' };

describe('stored schedule limits', () => {
  it('a cron over 1,024 characters is refused before it is compiled, in a short message', async () => {
    const s = await scheduler();
    for (const cron of [`0 9 * * ${'1,'.repeat(600)}1`, 'x'.repeat(10_000_000)]) {
      const started = performance.now();
      const err = await refused(s.schedules.upsert({ ...base, cron }));
      expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(err.message).toContain('at most 1024');
      expect(err.message.length).toBeLessThan(300);
      // Refused at once, not after croner parsed a megabyte (generous: a shared machine).
      expect(performance.now() - started).toBeLessThan(500);
    }
    // The same limit for a job's own trigger and for fireTimes().
    expect(() => fireTimes({ cron: 'x'.repeat(2_000) }, { after: new Date(), count: 1 })).toThrow(
      /at most 1024/,
    );
    expect(() => s.define('big', { cron: `0 ${'0,'.repeat(600)}0 * * *` }, () => {})).toThrow(/at most 1024/);
    expect((await s.schedules.list()).length).toBe(0);
  });

  it('a time zone or duration text that long is refused without being echoed', async () => {
    const s = await scheduler();
    const zone = await refused(
      s.schedules.upsert({ ...base, cron: '0 9 * * *', timezone: `Europe/${'x'.repeat(100_000)}` }),
    );
    expect(zone).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('at most 64') });
    expect(zone.message.length).toBeLessThan(300);
    const every = await refused(s.schedules.upsert({ ...base, every: '1'.repeat(100_000) }));
    expect(every).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('at most 64') });
    expect(every.message.length).toBeLessThan(300);
  });

  it('a schedule over 64 KiB as JSON is refused, one just under is kept', async () => {
    const s = await scheduler();
    const err = await refused(
      s.schedules.upsert({ ...base, cron: '0 9 * * *', data: { blob: 'x'.repeat(10 * 1024 * 1024) } }),
    );
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(err.message).toMatch(/entry 0: data: the schedule as JSON is \d+ bytes; at most 65536/);
    expect(err.message.length).toBeLessThan(300);
    // Multi-byte text counts in bytes.
    const wide = await refused(
      s.schedules.upsert({ ...base, cron: '0 9 * * *', data: { text: 'é'.repeat(40_000) } }),
    );
    expect(wide).toMatchObject({ code: 'INVALID_ARGUMENT' });
    await s.schedules.upsert({ ...base, cron: '0 9 * * *', data: { blob: 'x'.repeat(60_000) } });
    expect((await s.schedules.get('u1'))?.data).toEqual({ blob: 'x'.repeat(60_000) });
  });

  it('a bulk upsert lets the event loop turn while it validates', async () => {
    const s = await scheduler();
    let turns = 0;
    let on = true;
    const spin = () => {
      if (!on) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const entries = Array.from({ length: 20_000 }, (_, i) => ({
      id: `u${i}`,
      job: 'report',
      cron: '0 9 * * *',
    }));
    await s.schedules.upsert(entries);
    on = false;
    // Validated a slice at a time: at least one turn per 1,000 entries (before: none).
    expect(turns).toBeGreaterThanOrEqual(19);
    expect(await s.schedules.count()).toBe(20_000);
  });
});

for (const backend of ['mysql', 'etcd'] as const) {
  const target = serverBackend(backend);
  describe.skipIf(target.skip)(`bulk upsert of large schedules (${backend})`, () => {
    it('is written in batches that fit one request to the server', async () => {
      // 200 schedules of ~60 KiB: 12 MB, one batch before — over etcd's 1.5 MiB request limit
      // and over what MariaDB's default max_allowed_packet (16 MiB) carries hex-encoded.
      const store = await openStore(target.url!, { prefix: testPrefix(`bulkbig_${backend}`) });
      try {
        const s = createScheduler({ store });
        const blob = 'x'.repeat(60_000);
        await s.schedules.upsert(
          Array.from({ length: 200 }, (_, i) => ({
            id: `u${i}`,
            job: 'report',
            cron: '0 9 * * *',
            data: { blob },
          })),
        );
        expect(await s.schedules.count()).toBe(200);
        expect((await s.schedules.get('u199'))?.data).toEqual({ blob });
      } finally {
        await store.close();
      }
    }, 120_000);
  });
}
