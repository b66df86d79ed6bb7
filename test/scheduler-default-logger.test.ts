import { afterEach, describe, expect, test, vi } from 'vitest';
import {
  createScheduler,
  type Logger,
  OncelyError,
  openStore,
  type Scheduler,
  type Store,
  silentLogger,
} from '../src/index.js';
import { testPrefix } from './harness/backends.js';
import { until } from './harness/scheduler-suite.js';

// Loud by default: without a `logger`, a scheduler writes its warnings and errors to stderr (as
// once() does), so a handler that throws is seen without querying history. `logger: false` or
// `silentLogger` turns that off.
describe('the scheduler without a logger', () => {
  let scheduler: Scheduler | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await scheduler?.stop();
    await store?.close();
    scheduler = undefined;
    store = undefined;
    vi.restoreAllMocks();
  });

  /** console.warn/error calls while a handler that throws runs once (and the store then fails). */
  async function stderrOf(logger: Logger | false | undefined): Promise<string[]> {
    const lines: string[] = [];
    const keep = (...args: unknown[]) => {
      // One line each: the record as text, then (for a failure) the error, for its stack.
      if (
        typeof args[0] !== 'string' ||
        args[0].includes('\n') ||
        !args.slice(1).every((a) => a instanceof Error)
      )
        lines.push(`not one line: ${String(args[0])}`);
      // An OncelyError (the store's) is told in the line itself, without its stack.
      if (args.slice(1).some((a) => a instanceof OncelyError)) lines.push('a stack for an OncelyError');
      lines.push(
        args
          .map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : JSON.stringify(a)))
          .join(' '),
      );
    };
    vi.spyOn(console, 'warn').mockImplementation(keep);
    vi.spyOn(console, 'error').mockImplementation(keep);
    vi.spyOn(console, 'info').mockImplementation(keep);
    vi.spyOn(console, 'log').mockImplementation(keep);
    vi.spyOn(console, 'debug').mockImplementation(keep);
    store = await openStore(`memory:${testPrefix('loud')}`);
    const failing = store;
    scheduler = createScheduler({
      store,
      pollInterval: '100ms',
      ...(logger !== undefined && { logger }),
    });
    let failures = 0;
    scheduler.on('failed', () => failures++);
    scheduler.define('report', {}, () => {
      throw new Error('SMTP refused the mail');
    });
    await scheduler.start();
    await scheduler.trigger('report');
    await until(() => failures > 0, 5_000, 'the failed run');
    // A store outage: every read now fails.
    let errors = 0;
    scheduler.on('error', () => errors++);
    const outage = () =>
      Promise.reject(new OncelyError('STORE_UNAVAILABLE', 'memory store: scan failed: ECONNRESET'));
    failing.scan = outage;
    failing.get = outage;
    await until(() => errors > 0, 5_000, 'a store error');
    await new Promise((r) => setTimeout(r, 50));
    return lines;
  }

  test('writes a failed run and a store outage to stderr, and nothing on success paths', async () => {
    const lines = await stderrOf(undefined);
    expect(
      lines.some((l) => l.includes('report') && l.includes('failed') && l.includes('SMTP refused')),
    ).toBe(true);
    expect(lines.some((l) => l.includes('ECONNRESET'))).toBe(true);
    expect(lines).not.toContain('a stack for an OncelyError');
    expect(lines.every((l) => !l.includes('started') && !l.startsWith('not one line'))).toBe(true);
    expect(lines.find((l) => l.includes('SMTP'))).toMatch(
      /^oncely: report failed · job=report fireTime=\S+ node=/,
    );
  });

  test.each([
    ['false', false],
    ['silentLogger', silentLogger],
  ] as const)('logger: %s writes nothing', async (_name, logger) => {
    expect(await stderrOf(logger)).toEqual([]);
  });

  test('a bad logger names the choices', () => {
    expect(() => createScheduler({ store: {} as Store, logger: 'console' as never })).toThrow(/or be false/);
  });
});
