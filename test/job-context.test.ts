import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { JobSpec } from '../src/scheduler/job-options.js';
import { jobContext, type SignalSource } from '../src/scheduler/run/job-context.js';
import type { Claim } from '../src/scheduler/run/run-records.js';

const claim = (occ: Partial<Claim['occ']>, data?: unknown): Claim =>
  ({
    occ: { job: 'report', fireTime: Date.UTC(2026, 10, 29, 9, 30), ...occ },
    lease: { key: 'k', owner: 'n1', token: 42, acquiredAt: 0, expiresAt: 1 },
    ...(data !== undefined && { data }),
  }) as unknown as Claim;

const spec = (shards?: { count: number; params: (string | undefined)[] }): JobSpec =>
  ({ ...(shards && { shards }) }) as unknown as JobSpec;

/** A signal source that counts how often its AbortSignal was asked for. */
function counting(): SignalSource & { reads: number } {
  const controller = new AbortController();
  return {
    reads: 0,
    get signal() {
      this.reads++;
      return controller.signal;
    },
  };
}

describe('jobContext', () => {
  it('has the documented fields in order, optional ones only when set', () => {
    const ctx = jobContext(claim({}), spec(), 1, 'n1', counting());
    expect(Object.keys(ctx)).toEqual([
      'job',
      'fireTime',
      'scheduledAt',
      'attempt',
      'node',
      'token',
      'signal',
    ]);
    // Without jitter the occurrence was to start at its fire time.
    expect(ctx.scheduledAt.getTime()).toBe(ctx.fireTime.getTime());
    expect(ctx).toMatchObject({ job: 'report', attempt: 1, node: 'n1', token: 42 });
    expect(ctx.fireTime.toISOString()).toBe('2026-11-29T09:30:00.000Z');
    expect('scheduleId' in ctx).toBe(false);
    const full = jobContext(
      claim({ scheduleId: 'u-1', shard: 1 }, { userId: 7 }),
      spec({ count: 2, params: ['north', 'south'] }),
      3,
      'n2',
      counting(),
    );
    expect(Object.keys(full)).toEqual([
      'job',
      'fireTime',
      'scheduledAt',
      'attempt',
      'node',
      'token',
      'signal',
      'scheduleId',
      'data',
      'shard',
    ]);
    expect(full).toMatchObject({
      scheduleId: 'u-1',
      data: { userId: 7 },
      shard: { index: 1, count: 2, param: 'south' },
    });
    const noParam = jobContext(claim({ shard: 0 }), spec({ count: 2, params: [] }), 1, 'n1', counting());
    expect(noParam.shard).toEqual({ index: 0, count: 2 });
  });

  it('makes the AbortSignal only when the handler reads it, and a spread copies it', () => {
    const source = counting();
    const ctx = jobContext(claim({}), spec(), 1, 'n1', source);
    expect(source.reads).toBe(0);
    const copy = { ...ctx };
    expect(source.reads).toBe(1);
    expect(copy.signal).toBeInstanceOf(AbortSignal);
    expect(ctx.signal).toBe(copy.signal);
    // Nothing else of the context's internals shows in a copy or in JSON.
    expect(Object.keys(copy)).toEqual(Object.keys(ctx));
    expect(Object.getOwnPropertySymbols(copy)).toEqual([]);
    expect(Object.keys(JSON.parse(JSON.stringify(ctx)))).toEqual(Object.keys(ctx));
  });

  it('gives every context fast properties and one hidden class per kind (V8)', () => {
    // A context written as an object literal with a getter was a dictionary-mode object in V8:
    // a hash table of its own per run (~0.5 KB more per run in flight), slow property reads.
    const script = `
      const { jobContext } = await import(${JSON.stringify(new URL('../src/scheduler/run/job-context.ts', import.meta.url).href)});
      const claim = (token) => ({ occ: { job: 'j', fireTime: 1e12, scheduleId: 's' }, lease: { token } });
      const source = { signal: new AbortController().signal };
      const a = jobContext(claim(1), {}, 1, 'n', source);
      const b = jobContext(claim(2), {}, 1, 'n', source);
      console.log(%HasFastProperties(a), %HaveSameMap(a, b));
    `;
    const out = execFileSync(
      process.execPath,
      ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', script],
      { encoding: 'utf8' },
    );
    expect(out.trim()).toBe('true true');
  });
});
