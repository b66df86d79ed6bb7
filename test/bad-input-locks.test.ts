/**
 * Bad input to the lock API, catalogued (docs/faults.md, "Bad input"): `tryLock`, `withLock` and
 * `extend` on a real (memory) store. Each is `INVALID_ARGUMENT` naming the lock and the field, and
 * none leaves a lock held.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryStore, type TryLockOptions, withLock } from '../src/index.js';
import { invalid } from './fixtures/bad-input.js';

const store = new MemoryStore();
afterAll(async () => {
  await store.close();
});

describe('tryLock options', () => {
  it.each<[string, unknown, RegExp[]]>([
    ['no name', { lockAtMostFor: '1m' }, [/lock name must be a non-empty string/]],
    ['empty name', { name: '', lockAtMostFor: '1m' }, [/lock name must be a non-empty string/]],
    [
      '256-character name',
      { name: 'n'.repeat(256), lockAtMostFor: '1m' },
      [/lock name is 256 characters long; at most 255 are allowed/],
    ],
    [
      'name with NUL',
      { name: 'a\u0000b', lockAtMostFor: '1m' },
      [/lock name must not contain NUL characters/],
    ],
    ['no lockAtMostFor', { name: 'l' }, [/lock "l": lockAtMostFor is required/]],
    [
      'lockAtMostFor -5',
      { name: 'l', lockAtMostFor: -5 },
      [/lock "l": lockAtMostFor must be a finite, non-negative number of milliseconds; got -5/],
    ],
    [
      'lockAtMostFor 0s',
      { name: 'l', lockAtMostFor: '0s' },
      [/lock "l": lockAtMostFor must be greater than 0/],
    ],
    [
      'lockAtMostFor soon',
      { name: 'l', lockAtMostFor: 'soon' },
      [/lock "l": lockAtMostFor "soon" is not a duration/],
    ],
    [
      'lockAtMostFor over 100 years',
      { name: 'l', lockAtMostFor: '40000d' },
      [/lock "l": lockAtMostFor must be a whole number of milliseconds between 1 and 3153600000000/],
    ],
    [
      'lockAtLeastFor above lockAtMostFor',
      { name: 'l', lockAtMostFor: '1s', lockAtLeastFor: '1m' },
      [/lock "l": lockAtLeastFor \(60000 ms\) must not exceed lockAtMostFor \(1000 ms\)/],
    ],
    [
      'unknown option lockAtMostFr',
      { name: 'l', lockAtMostFr: '1m' },
      [/unknown lock option "lockAtMostFr"; known: name, lockAtMostFor/],
    ],
    ['empty owner', { name: 'l', lockAtMostFor: '1m', owner: '' }, [/owner must be a non-empty string/]],
    [
      '256-character owner',
      { name: 'l', lockAtMostFor: '1m', owner: 'o'.repeat(256) },
      [/owner is 256 characters long; at most 255 are allowed/],
    ],
    [
      'options null',
      null,
      [/lock options must be an object \{ name, lockAtMostFor, lockAtLeastFor\?, owner\? \}/],
    ],
  ])('tryLock: %s', async (_title, options, patterns) => {
    await invalid(() => store.tryLock(options as TryLockOptions), ...patterns);
    expect(await store.listLeases()).toEqual([]);
  });
});

describe('withLock and extend', () => {
  it("withLock: keepAlive 'no' (not a boolean)", async () => {
    let ran = false;
    await invalid(
      () =>
        withLock(store, { name: 'w', lockAtMostFor: '1m', keepAlive: 'no' as never }, () => {
          ran = true;
        }),
      /withLock: keepAlive must be true or false; got "no"/,
    );
    expect(ran).toBe(false);
    expect(await store.listLeases()).toEqual([]);
  });

  it('withLock: a callback that is not a function', async () => {
    await invalid(
      () => withLock(store, { name: 'w', lockAtMostFor: '1m' }, 'run' as never),
      /withLock: the third argument must be a function/,
    );
    expect(await store.listLeases()).toEqual([]);
  });

  it.each<[string, unknown, RegExp]>([
    ['extend(0)', 0, /lockAtMostFor must be greater than 0/],
    ["extend('-1s')", '-1s', /"-1s" is not a duration/],
  ])('%s', async (_title, by, pattern) => {
    const lock = await store.tryLock({ name: `extend-${String(by)}`, lockAtMostFor: '1m' });
    expect(lock).not.toBeNull();
    await invalid(() => lock!.extend(by as never), pattern);
    expect(await lock!.release()).toBe(true);
  });
});
