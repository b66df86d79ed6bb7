import { describe, expect, it } from 'vitest';
import { OncelyError } from '../src/core/errors.js';
import { type JobOptions, jobSpec } from '../src/scheduler/job-options.js';

describe('job definitions', () => {
  it('fills in the documented defaults', () => {
    const spec = jobSpec('send-report', { cron: '0,30 * * * *' });
    expect(spec).toMatchObject({
      name: 'send-report',
      overlap: 'skip',
      misfire: 'run-once',
      catchUpLimit: 100,
      misfireThresholdMs: 1000,
      lockAtMostForMs: 30_000,
      lockAtLeastForMs: 0,
      timeoutMs: undefined,
      retries: 0,
      retryDelayMs: 1000,
      recover: true,
      shards: undefined,
    });
    expect(spec.trigger).toMatchObject({ kind: 'cron', timezone: 'UTC' });
    expect(spec.triggerSource).toEqual({ cron: '0,30 * * * *' });
  });

  it('accepts a job without a trigger (stored schedules and trigger() only)', () => {
    expect(jobSpec('on-demand').trigger).toBeUndefined();
  });

  it('reads shards as a count or as parameters', () => {
    expect(jobSpec('a', { every: '5s', shards: 3 }).shards).toEqual({
      count: 3,
      params: [undefined, undefined, undefined],
    });
    expect(jobSpec('b', { every: '5s', shards: ['north', 'south'] }).shards).toEqual({
      count: 2,
      params: ['north', 'south'],
    });
  });

  it('accepts names up to 255 characters as stored', () => {
    expect(jobSpec('x'.repeat(255), { every: '1s' }).name).toHaveLength(255);
    expect(jobSpec(`${'|'.repeat(85)}`, {}).name).toHaveLength(85);
  });

  const bad: [string, unknown, JobOptions | unknown, RegExp][] = [
    ['empty name', '', {}, /job name/],
    ['long name', 'x'.repeat(256), {}, /at most 255/],
    ['long name once escaped', '|'.repeat(86), {}, /258 characters long as stored/],
    ['control character in name', 'a\nb', {}, /control/],
    ['unknown option', 'j', { cron: '* * * * *', retires: 3 }, /"j": retires is not a job option/],
    ['two triggers', 'j', { cron: '* * * * *', every: '1m' }, /"j".*only one of cron, every or at/],
    ['bad cron', 'j', { cron: '99 * * * *' }, /"j".*cron/],
    ['bad time zone', 'j', { cron: '0 * * * *', timezone: 'Europe/Atlantis' }, /"j": timezone/],
    ['time zone without cron', 'j', { every: '1m', timezone: 'UTC' }, /"j".*timezone/],
    ['bad duration', 'j', { every: '1m', lockAtMostFor: 'a while' }, /"j": lockAtMostFor/],
    ['zero interval', 'j', { every: 0 }, /"j": every/],
    [
      'lockAtLeastFor > lockAtMostFor',
      'j',
      { every: '1m', lockAtMostFor: '1s', lockAtLeastFor: '2s' },
      /lockAtLeastFor/,
    ],
    [
      'bad overlap',
      'j',
      { every: '1m', overlap: 'sometimes' },
      /"j": overlap must be one of 'skip', 'queue', 'queue-all', 'replace', 'allow'/,
    ],
    ['bad misfire', 'j', { every: '1m', misfire: 'retry' }, /"j": misfire/],
    ['bad catchUpLimit', 'j', { every: '1m', catchUpLimit: 0 }, /"j": catchUpLimit/],
    ['bad retries', 'j', { every: '1m', retries: 1.5 }, /"j": retries/],
    ['bad timeout', 'j', { every: '1m', timeout: -1 }, /"j": timeout/],
    ['bad recover', 'j', { every: '1m', recover: 'yes' }, /"j": recover/],
    ['bad shards', 'j', { every: '1m', shards: 0 }, /"j": shards/],
    ['empty shard list', 'j', { every: '1m', shards: [] }, /"j": shards/],
    ['options not an object', 'j', 'every minute', /options must be an object/],
  ];
  it.each(
    bad,
  )('refuses %s with INVALID_ARGUMENT naming the job and field', (_label, name, options, message) => {
    let error: unknown;
    try {
      jobSpec(name, options as JobOptions);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(OncelyError);
    expect((error as OncelyError).code).toBe('INVALID_ARGUMENT');
    expect((error as OncelyError).message).toMatch(message);
  });
});
