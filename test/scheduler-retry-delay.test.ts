import { afterEach, describe, expect, test } from 'vitest';
import { systemClock } from '../src/core/clock.js';
import { type Clock, createScheduler, openStore, type Scheduler, silentLogger } from '../src/index.js';
import { retryWait } from '../src/scheduler/run/run.js';
import { testPrefix } from './harness/backends.js';
import { until } from './harness/scheduler-suite.js';

// retryDelay is a minimum: the jitter only adds to it (at most half of it), so `retryDelay: 1s`
// never retries sooner than 1 s after the failure, whatever the random source says.
describe('retryDelay', () => {
  test('the wait is the delay times 2^n plus at most half of that, never less', () => {
    expect(retryWait(1000, 0, () => 0)).toBe(1000);
    expect(retryWait(1000, 0, () => 0.999_999)).toBeLessThan(1500);
    expect(retryWait(1000, 0, () => 0.999_999)).toBeGreaterThan(1499);
    expect(retryWait(1000, 2, () => 0)).toBe(4000);
    expect(retryWait(1000, 2, () => 0.5)).toBe(5000);
  });

  let scheduler: Scheduler | undefined;
  afterEach(async () => {
    await scheduler?.stop();
    scheduler = undefined;
  });

  for (const [what, r] of [
    ['lowest', 0],
    ['highest', 0.999],
  ] as const) {
    test(`a scheduler whose random draws its ${what} value waits at least retryDelay before the retry`, async () => {
      const store = await openStore(`memory:${testPrefix('retry-delay')}`);
      const sleeps: number[] = [];
      const base = systemClock;
      const clock: Clock = {
        monotonic: () => base.monotonic(),
        sleep: (ms, signal) => {
          sleeps.push(ms);
          return base.sleep(ms, signal);
        },
      };
      scheduler = createScheduler({ store, clock, random: () => r, logger: silentLogger });
      const starts: number[] = [];
      const ends: number[] = [];
      scheduler.define('flaky', { retries: 1, retryDelay: '1s' }, () => {
        starts.push(performance.now());
        try {
          if (starts.length === 1) throw new Error('first attempt fails');
        } finally {
          ends.push(performance.now());
        }
      });
      await scheduler.start();
      await scheduler.trigger('flaky');
      await until(() => starts.length >= 2, 5_000, 'the retry');
      const gap = starts[1]! - ends[0]!;
      expect(gap).toBeGreaterThanOrEqual(995);
      expect(gap).toBeLessThan(1500 + 500);
      // The retry's wait went through the injected clock: exactly 1000 × (1 + r/2) ms.
      expect(sleeps).toContain(1000 * (1 + r / 2));
      await store.close();
    });
  }
});
