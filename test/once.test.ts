import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cron } from 'croner';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type Logger,
  OncelyError,
  type OnceOutcome,
  once,
  onceClaimKey,
  openStore,
  type Store,
  systemClock,
} from '../src/index.js';
import { deriveFireTime } from '../src/integrations/once/fire-time.js';
import { compileTrigger, fireTimes, latestFireTime, type Trigger } from '../src/schedule/index.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-once-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const at = (iso: string) => Date.parse(iso);
const isoOf = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** A logger that keeps what it is given, for asserting on warnings and errors. */
function recordingLogger(): Logger & { lines: { level: string; args: unknown[] }[] } {
  const lines: { level: string; args: unknown[] }[] = [];
  const keep =
    (level: string) =>
    (...args: unknown[]) =>
      lines.push({ level, args });
  return { lines, debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') };
}

describe('latestFireTime', () => {
  it('every: the epoch-anchored multiple at or before the instant', () => {
    const every10s = compileTrigger({ every: '10s' });
    expect(isoOf(latestFireTime(every10s, at('2026-01-01T12:00:13.250Z')))).toBe('2026-01-01T12:00:10.000Z');
    expect(isoOf(latestFireTime(every10s, at('2026-01-01T12:00:10.000Z')))).toBe('2026-01-01T12:00:10.000Z');
    expect(isoOf(latestFireTime(every10s, at('2026-01-01T12:00:09.999Z')))).toBe('2026-01-01T12:00:00.000Z');
  });

  it('cron: inclusive of an exact fire time, in the trigger time zone', () => {
    const berlin9 = compileTrigger({ cron: '0 9 * * *', timezone: 'Europe/Berlin' });
    expect(isoOf(latestFireTime(berlin9, at('2026-07-01T07:00:00.000Z')))).toBe('2026-07-01T07:00:00.000Z'); // 09:00 CEST
    expect(isoOf(latestFireTime(berlin9, at('2026-07-01T06:59:59.999Z')))).toBe('2026-06-30T07:00:00.000Z');
    expect(isoOf(latestFireTime(berlin9, at('2026-01-15T08:00:02.000Z')))).toBe('2026-01-15T08:00:00.000Z'); // 09:00 CET
    const seconds = compileTrigger({ cron: '*/5 * * * * *' });
    expect(isoOf(latestFireTime(seconds, at('2026-01-01T00:00:09.999Z')))).toBe('2026-01-01T00:00:05.000Z');
    expect(latestFireTime(compileTrigger({ at: '2999-01-01T00:00:00Z' }), Date.now())).toBeUndefined();
  });

  it('agrees with the forward fire times (fireTimes) at random instants, DST days included', () => {
    // Each row: a trigger and a stretch of time; at 100 seeded instants in it, the answer must be the
    // last of the fire times fireTimes lists from well before the instant (a different code path).
    const day = 86_400_000;
    const rows: [Trigger, string, number][] = [
      [{ cron: '*/15 * * * *', timezone: 'America/New_York' }, '2026-11-01T04:00:00Z', 4 * 3_600_000], // fall back
      [{ cron: '30 2 * * *', timezone: 'America/New_York' }, '2026-03-06T00:00:00Z', 4 * day], // spring forward
      [{ cron: '30 1 * * *', timezone: 'America/New_York' }, '2026-10-30T00:00:00Z', 4 * day], // repeated hour
      [{ cron: '*/7 * * * * *' }, '2026-05-01T00:00:00Z', 600_000],
      [{ cron: '0 */30 * * * *', timezone: 'Australia/Lord_Howe' }, '2026-04-04T12:00:00Z', 6 * 3_600_000],
      [{ every: '7m' }, '2026-05-01T00:00:00Z', day],
    ];
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    for (const [trigger, from, span] of rows) {
      const compiled = compileTrigger(trigger);
      // From two days (or two minutes, for the per-second pattern) before the stretch to its end.
      const start = at(from) - (span < day ? 120_000 : 2 * day);
      const all: number[] = [];
      for (let after = start; after <= at(from) + span; ) {
        const next = fireTimes(compiled, { after, count: 1 })[0]!.getTime();
        all.push(next);
        after = next;
      }
      for (let i = 0; i < 100; i++) {
        const instant = Math.floor(at(from) + random() * span);
        const expected = all.filter((t) => t <= instant).at(-1);
        expect(
          isoOf(latestFireTime(compiled, instant)),
          `${JSON.stringify(trigger)} at ${isoOf(instant)}`,
        ).toBe(isoOf(expected));
      }
    }
  });
});

describe('deriveFireTime: the fire time a tick stands for', () => {
  const every1s = compileTrigger({ every: '1s' });

  it('node-cron 4: the scheduled slot in the context, however late the callback runs', () => {
    const slot = new Date('2026-01-01T12:00:05.000Z');
    const context = { date: slot, triggeredAt: new Date(slot.getTime() + 1_500), dateLocalIso: '' };
    expect(deriveFireTime(undefined, context, slot.getTime() + 1_800, 'x')).toEqual({
      fireTime: slot.getTime(),
      from: 'node-cron',
    });
    expect(deriveFireTime(every1s, context, slot.getTime() + 1_800, 'x')?.fireTime).toBe(slot.getTime());
    // task.execute() passes the moment of the call: its own occurrence, or snapped by the options.
    const manual = { date: new Date(slot.getTime() + 321), triggeredAt: new Date() };
    expect(deriveFireTime(undefined, manual, 0, 'x')?.fireTime).toBe(slot.getTime() + 321);
    expect(deriveFireTime(every1s, manual, 0, 'x')?.fireTime).toBe(slot.getTime());
  });

  it("croner: the job's own schedule and time zone snap the moment it fired", () => {
    const job = new Cron('0 9 * * *', { timezone: 'Asia/Shanghai', paused: true });
    // Never fired (currentRun() is null): the local clock stands in; 09:00:03 in Shanghai.
    expect(isoOf(deriveFireTime(undefined, job, at('2026-01-01T01:00:03.000Z'), 'x')?.fireTime)).toBe(
      '2026-01-01T01:00:00.000Z',
    );
    // A tick 40 s late still stands for 09:00.
    expect(isoOf(deriveFireTime(undefined, job, at('2026-01-01T01:00:40.000Z'), 'x')?.fireTime)).toBe(
      '2026-01-01T01:00:00.000Z',
    );
    // A schedule in the options decides over the job's.
    expect(
      isoOf(
        deriveFireTime(compileTrigger({ every: '1h' }), job, at('2026-01-01T01:20:00.000Z'), 'x')?.fireTime,
      ),
    ).toBe('2026-01-01T01:00:00.000Z');
    job.stop();
  });

  it('croner: a real tick is snapped to its whole-second fire time', async () => {
    const derived = await new Promise<ReturnType<typeof deriveFireTime>>((resolve) => {
      new Cron('* * * * * *', { maxRuns: 1 }, (self) => {
        // What croner says about this tick: the moment it fired, with milliseconds.
        const firedAt = self.currentRun()!.getTime();
        resolve(deriveFireTime(undefined, self, firedAt + 999_999, 'x'));
      });
    });
    expect(derived?.from).toBe('croner');
    expect(derived!.fireTime % 1000).toBe(0);
    expect(Date.now() - derived!.fireTime).toBeLessThan(1_000);
  });

  it('setInterval and node-cron 3: the local clock, snapped with the options; without them, refused', () => {
    const now = at('2026-01-01T12:00:00.750Z');
    expect(deriveFireTime(compileTrigger({ every: '1m' }), undefined, now, 'x')).toEqual({
      fireTime: at('2026-01-01T12:00:00.000Z'),
      from: 'clock',
    });
    // node-cron 3 passes a Date (shifted into the task's zone when it has one): not trusted.
    const shifted = new Date(now + 8 * 3_600_000);
    expect(deriveFireTime(compileTrigger({ every: '1m' }), shifted, now, 'x')?.fireTime).toBe(
      at('2026-01-01T12:00:00.000Z'),
    );
    for (const tick of [undefined, shifted, 3]) {
      expect(() => deriveFireTime(undefined, tick, now, 'sync')).toThrow(
        expect.objectContaining({
          code: 'INVALID_ARGUMENT',
          message: expect.stringContaining("{ every: '…' }"),
        }),
      );
    }
  });
});

describe.each([
  ['memory', () => openStore(`memory:once-${Math.random()}`)],
  ['sqlite', () => openStore(`sqlite:${join(dir, `once-${Math.random()}.db`)}`)],
])('once() on %s', (_kind, open) => {
  let store: Store;
  beforeEach(async () => {
    store = await open();
  });
  afterEach(async () => {
    await store.close();
  });

  it('runs a fire time on one instance; a late tick anywhere finds it taken until fireTime + tolerance', async () => {
    const runs: { fireTime: number; token: number }[] = [];
    const fn = (ctx: { fireTime: Date; token: number }) => {
      runs.push({ fireTime: ctx.fireTime.getTime(), token: ctx.token });
      return 'sent';
    };
    // every 1h: the fire time is the start of this hour, the default tolerance an hour.
    const a = once(store, { name: 'report', every: '1h', owner: 'instance-a' }, fn);
    const b = once(store, { name: 'report', every: '1h', owner: 'instance-b' }, fn);
    const first = await a.run();
    const fire = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    expect(first).toMatchObject({ status: 'succeeded', value: 'sent', fireTime: new Date(fire) });
    expect(await b.run()).toEqual({ status: 'skipped', reason: 'taken', fireTime: new Date(fire) });
    expect(await a.run()).toEqual({ status: 'skipped', reason: 'taken', fireTime: new Date(fire) });
    expect(runs).toEqual([{ fireTime: fire, token: (first as { token: number }).token }]);
    const hold = await store.inspect(onceClaimKey('report', fire));
    expect(hold).toMatchObject({ owner: 'instance-a', expiresAt: fire + 3_600_000 });
    expect(hold!.key).toBe(`once:report@${new Date(fire).toISOString()}`);
  });

  it('refuses a claim granted later than fireTime + tolerance (a missed fire time), and frees the key', async () => {
    const logger = recordingLogger();
    let ran = false;
    // This instance's clock reads 10 s behind: its tick is for a fire time ~10 s ago on the store clock.
    const tick = once(
      store,
      { name: 'late', every: '1s', tolerance: '2s', logger },
      () => {
        ran = true;
      },
      { now: () => Date.now() - 10_000 },
    );
    const outcome = await tick.run();
    expect(outcome).toMatchObject({ status: 'skipped', reason: 'late' });
    expect(ran).toBe(false);
    expect(logger.lines.map((l) => l.level)).toEqual(['warn']);
    expect(String(logger.lines[0]!.args[0])).toMatch(
      /claimed \d+\.\d s after it on the store clock \(tolerance 2 s\)/,
    );
    expect(await store.inspect(onceClaimKey('late', outcome.fireTime!.getTime()))).toBeNull();
  });

  it('waits for the fire time on the store clock when this instance runs ahead', async () => {
    // Clock 1.5 s ahead: the tick is for a fire time 0.5-1.5 s in the future on the store clock.
    const tick = once(
      store,
      { name: 'early', every: '1s' },
      async (ctx) => ({ storeNow: await store.now(), fireTime: ctx.fireTime.getTime() }),
      { now: () => Date.now() + 1_500 },
    );
    const started = performance.now();
    const outcome = await tick.run();
    expect(outcome.status).toBe('succeeded');
    const { storeNow, fireTime } = (
      outcome as Extract<OnceOutcome<{ storeNow: number; fireTime: number }>, { status: 'succeeded' }>
    ).value;
    expect(storeNow).toBeGreaterThanOrEqual(fireTime);
    expect(performance.now() - started).toBeGreaterThanOrEqual(400);
  });

  it('holds the claim until at least fireTime + tolerance while fn runs (a crash cannot free it early)', async () => {
    const tick = once(
      store,
      { name: 'held', every: '1s', lockAtMostFor: '1s', tolerance: '5s' },
      async (ctx) => {
        const lease = await store.inspect(onceClaimKey('held', ctx.fireTime.getTime()));
        return {
          expiresAt: lease!.expiresAt,
          token: lease!.token,
          ctxToken: ctx.token,
          aborted: ctx.signal.aborted,
        };
      },
    );
    const outcome = await tick.run();
    expect(outcome.status).toBe('succeeded');
    const v = (
      outcome as Extract<
        OnceOutcome<{ expiresAt: number; token: number; ctxToken: number; aborted: boolean }>,
        { status: 'succeeded' }
      >
    ).value;
    expect(v.expiresAt).toBeGreaterThanOrEqual(outcome.fireTime!.getTime() + 5_000);
    expect(v.ctxToken).toBe(v.token);
    expect(v.aborted).toBe(false);
  });

  it('reports a throwing fn without rejecting; the fire time stays done', async () => {
    const errors: { error: unknown; during: string; fireTime: Date | undefined }[] = [];
    const boom = new Error('boom');
    let calls = 0;
    const tick = once(
      store,
      { name: 'throws', every: '1h', onError: (error, info) => errors.push({ error, ...info }) },
      () => {
        calls++;
        throw boom;
      },
    );
    const outcome = await tick.run();
    expect(outcome).toMatchObject({ status: 'failed', error: boom });
    await expect(tick()).resolves.toBeUndefined(); // the form a cron library calls
    expect(calls).toBe(1);
    expect(errors).toEqual([{ error: boom, during: 'run', name: 'throws', fireTime: outcome.fireTime }]);
  });

  it('a store outage skips the tick (never runs unclaimed) and reports it; the next tick runs', async () => {
    let outage = true;
    const flaky = new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (outage && (property === 'acquire' || property === 'release'))
            return Promise.reject(new OncelyError('STORE_UNAVAILABLE', 'connection refused'));
          return value.apply(target, args);
        };
      },
    });
    const errors: string[] = [];
    let calls = 0;
    const tick = once(
      flaky,
      {
        name: 'outage',
        every: '1h',
        onError: (e, info) => errors.push(`${info.during}:${(e as OncelyError).code}`),
      },
      () => {
        calls++;
        outage = true; // the store goes away while fn runs: the release fails too
      },
    );
    expect(await tick.run()).toMatchObject({ status: 'skipped', reason: 'store-error' });
    expect(calls).toBe(0);
    outage = false;
    const ran = await tick.run();
    expect(ran.status).toBe('succeeded');
    expect(calls).toBe(1);
    expect(errors).toEqual(['claim:STORE_UNAVAILABLE', 'release:STORE_UNAVAILABLE']);
    // The unreleased claim still covers the fire time: the store is back, another tick finds it taken.
    outage = false;
    expect(await once(store, { name: 'outage', every: '1h' }, () => calls++).run()).toMatchObject({
      status: 'skipped',
      reason: 'taken',
    });
  });

  it('refuses a tick with no fire time (setInterval without a schedule), through onError', async () => {
    const logger = recordingLogger();
    let calls = 0;
    const tick = once(store, { name: 'bare', logger }, () => calls++);
    const outcome = await tick.run();
    expect(outcome).toMatchObject({ status: 'skipped', reason: 'no-fire-time' });
    expect((outcome as { error: OncelyError }).error.code).toBe('INVALID_ARGUMENT');
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]).toMatchObject({ level: 'error' });
    expect(calls).toBe(0);
    // An onError that throws reaches the logger, never the timer.
    const loud = once(
      store,
      {
        name: 'bare',
        logger,
        onError: () => {
          throw new Error('hook');
        },
      },
      () => calls++,
    );
    await expect(loud()).resolves.toBeUndefined();
    expect(logger.lines.at(-1)?.args[0]).toMatch(/onError threw/);
  });
});

describe('once() inside croner, on sqlite', () => {
  it('two croner jobs in one process, one wrapper each: every fire time runs once', async () => {
    const store = await openStore(`sqlite:${join(dir, 'croner-pair.db')}`);
    const outcomes: OnceOutcome<void>[] = [];
    const jobs = ['a', 'b'].map((owner) => {
      const tick = once(store, { name: 'croner-pair', owner }, () => {});
      return new Promise<void>((resolve) => {
        new Cron('* * * * * *', { maxRuns: 2 }, async (self) => {
          outcomes.push(await tick.run(self));
          if (self.runsLeft() === 0) resolve();
        });
      });
    });
    await Promise.all(jobs);
    const byFire = new Map<number, string[]>();
    for (const o of outcomes)
      byFire.set(o.fireTime!.getTime(), [...(byFire.get(o.fireTime!.getTime()) ?? []), o.status]);
    expect(outcomes).toHaveLength(4);
    expect([...byFire.values()].map((s) => s.sort())).toEqual([
      ['skipped', 'succeeded'],
      ['skipped', 'succeeded'],
    ]);
    await store.close();
  });

  it('a claim made while waiting for the fire time still lasts until fireTime + tolerance', async () => {
    const store = await openStore(`sqlite:${join(dir, 'ahead.db')}`);
    // Clock 0.7 s ahead, lease 0.2 + 0.3 s: the wait outlasts the first lease; fn must still find
    // the claim good until fireTime + tolerance (renewed while waiting, or renewed before fn).
    const tick = once(
      store,
      { name: 'ahead', every: '100ms', lockAtMostFor: '200ms', tolerance: '300ms' },
      async (ctx) => {
        const lease = await store.inspect(onceClaimKey('ahead', ctx.fireTime.getTime()));
        return { expiresAt: lease!.expiresAt, storeNow: await store.now() };
      },
      { now: () => Date.now() + 700 },
    );
    const outcome = await tick.run();
    expect(outcome.status).toBe('succeeded');
    const { expiresAt, storeNow } = (
      outcome as Extract<OnceOutcome<{ expiresAt: number; storeNow: number }>, { status: 'succeeded' }>
    ).value;
    const fire = outcome.fireTime!.getTime();
    expect(storeNow).toBeGreaterThanOrEqual(fire);
    expect(expiresAt).toBeGreaterThanOrEqual(fire + 300);
    await store.close();
  });

  it('sweeps expired claims at most once a minute per store', async () => {
    const base = await openStore(`sqlite:${join(dir, 'sweep.db')}`);
    let sweeps = 0;
    const store = new Proxy(base, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (property === 'sweep') sweeps++;
          return value.apply(target, args);
        };
      },
    });
    let shift = 0;
    const clock = { monotonic: () => performance.now() + shift, sleep: systemClock.sleep };
    const a = once(store, { name: 'sweep-a', every: '1h' }, () => {}, { clock });
    const b = once(store, { name: 'sweep-b', every: '1h' }, () => {}, { clock });
    await a.run();
    expect(sweeps).toBe(0);
    shift += 61_000;
    await a.run();
    await b.run();
    expect(sweeps).toBe(1);
    shift += 61_000;
    await b.run();
    expect(sweeps).toBe(2);
    await base.close();
  });
});

describe('once() options', () => {
  it('refuses bad input with INVALID_ARGUMENT naming the field', async () => {
    const store = await openStore('memory:');
    const bad = (options: object, pattern: RegExp) =>
      expect(() => once(store, options as never, () => {})).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(pattern) }),
      );
    bad({}, /name must be a non-empty string/);
    bad({ name: 'x'.repeat(256) }, /256 characters long/);
    bad({ name: 'x', lockAtLeastFor: '5s' }, /lockAtLeastFor is not an option here.*tolerance/);
    bad({ name: 'x', tolerence: '5s' }, /unknown once\(\) option "tolerence" \(did you mean "tolerance"\?\)/);
    bad({ name: 'x', cron: '* * * * *', every: '1s' }, /only one of cron, every/);
    bad({ name: 'x', timezone: 'Europe/Berlin' }, /timezone applies to cron only/);
    bad({ name: 'x', cron: '61 * * * *' }, /cron "61 \* \* \* \*" is invalid/);
    bad({ name: 'x', cron: '* * * * *', timezone: 'Mars/Olympus' }, /not a known IANA time zone/);
    bad({ name: 'x', tolerance: 0 }, /tolerance must be greater than 0/);
    bad({ name: 'x', lockAtMostFor: 'soon' }, /lockAtMostFor "soon" is not a duration/);
    bad({ name: 'x', onError: 'log' }, /onError must be a function/);
    expect(() => once({} as never, { name: 'x' }, () => {})).toThrow(/first argument must be a store/);
    expect(() => once(store, { name: 'x' }, 'run' as never)).toThrow(/third argument must be the function/);
    await store.close();
  });
});
