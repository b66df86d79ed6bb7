import { expect } from 'vitest';
import type { Store, WriteOp } from '../store/types.js';

/**
 * Text a store must keep as data, never read as syntax: SQL and LIKE/GLOB metacharacters,
 * backslashes in every position (a driver's `\'` is only an escape while the server's `sql_mode`
 * lacks NO_BACKSLASH_ESCAPES; with it, `\'` ends the string and what follows runs), control
 * characters, non-BMP text, long names. The `CREATE TABLE` payloads are shaped to close a VALUES
 * row or a WHERE clause of the MySQL statements and run a second statement. NUL is not here: no
 * store takes it in a key or value (INVALID_ARGUMENT, see validate.ts).
 */
export const ODD_STRINGS: readonly string[] = [
  `it's "quoted"`,
  `x'); DROP TABLE oncely_leases; --`,
  `x\\', 0x6f, 0, 0, 0); CREATE TABLE t (i INT); -- `,
  `x\\', 0x6f, 0); CREATE TABLE t (i INT); -- `,
  `x\\'; CREATE TABLE t (i INT); -- `,
  "back\\'quote",
  'back\\slash',
  'two \\\\ backslashes',
  'trailing backslash\\',
  '\\',
  '100%_like',
  '100%',
  '_under_score_',
  'emoji 🔒🚀 ünïcödé 中文',
  '\t tab and\nnewline ',
  'trailing spaces  ',
  '*?[glob]',
  '`backtick` "double" $1 ?',
  'x'.repeat(255),
  `${'🔒'.repeat(100)}`,
];

/**
 * Every {@link ODD_STRINGS} entry at the end of a key under `base` (so trailing characters stay
 * trailing), as record key, value, scan prefix and cursor, apply op key, lease key and owner, one
 * by one and in batches: each must come back byte for byte.
 */
export async function expectOddDataStored(store: Store, base: string): Promise<void> {
  const at = (space: string) =>
    ODD_STRINGS.map((raw, i) => `${base}/${space}/${String(i).padStart(2, '0')}/${raw}`);
  const single = at('put');
  for (const [i, key] of single.entries()) await store.put(key, ODD_STRINGS[i]!);
  for (const [i, key] of single.entries()) {
    expect(await store.get(key), `get ${JSON.stringify(key)}`).toBe(ODD_STRINGS[i]);
    const scanned = await store.scan(key, { limit: 100 });
    expect(scanned.every((r) => r.key.startsWith(key))).toBe(true);
    expect(scanned.find((r) => r.key === key)?.value).toBe(ODD_STRINGS[i]);
    const before = i > 0 ? single[i - 1]! : `${base}/put/`;
    const [next] = await store.scan(`${base}/put/`, { after: before, limit: 1 });
    expect(next?.key).toBe(key);
  }

  const batched = at('apply');
  const ops: WriteOp[] = batched.flatMap((key, i): WriteOp[] => [
    { op: 'put', key, value: `${ODD_STRINGS[i]!}\\` },
    { op: 'delete', key: single[i]! },
  ]);
  expect(await store.apply(ops)).toEqual(ops.map(() => true));
  const applied = await store.scan(`${base}/apply/`, { limit: 100 });
  expect(applied.map((r) => [r.key, r.value])).toEqual(batched.map((k, i) => [k, `${ODD_STRINGS[i]!}\\`]));
  expect(await store.scan(`${base}/put/`, { limit: 100 })).toEqual([]);
  for (const [i, key] of batched.entries()) {
    expect(await store.apply([{ op: 'put', key, value: ODD_STRINGS[i]! }])).toEqual([true]);
    expect(await store.get(key)).toBe(ODD_STRINGS[i]);
    expect(await store.apply([{ op: 'delete', key }])).toEqual([true]);
  }

  const leaseKeys = at('lease');
  const owners = ODD_STRINGS.map((raw) => raw.slice(0, 255));
  const granted = await store.acquire(
    leaseKeys.map((key, i) => ({ key, owner: owners[i]!, leaseMs: 10_000 })),
  );
  expect(granted.map((l) => [l?.key, l?.owner])).toEqual(leaseKeys.map((k, i) => [k, owners[i]]));
  const listed = await store.listLeases({ prefix: `${base}/lease/`, limit: 100 });
  expect(listed.map((l) => [l.key, l.owner, l.token])).toEqual(
    granted.map((l) => [l!.key, l!.owner, l!.token]),
  );
  for (const [i, key] of leaseKeys.entries()) {
    expect((await store.listLeases({ prefix: key, limit: 100 })).some((l) => l.key === key)).toBe(true);
    expect(await store.acquire([{ key, owner: owners[i]!, leaseMs: 10_000 }])).toEqual([null]);
    expect(await store.extend(key, granted[i]!.token, 10_000)).not.toBeNull();
  }
  expect(
    await store.apply(granted.map((l): WriteOp => ({ op: 'release', key: l!.key, token: l!.token }))),
  ).toEqual(granted.map(() => true));
  for (const [i, key] of leaseKeys.entries()) {
    const [again] = await store.acquire([{ key, owner: owners[i]!, leaseMs: 10_000 }]);
    expect(again?.owner).toBe(owners[i]);
    expect((await store.inspect(key))?.token).toBe(again!.token);
    expect(await store.release(key, again!.token)).toBe(true);
  }
}

/** Strings that differ from `value` only in ways a careless comparison ignores (case, padding, …). */
function nearMisses(value: string): string[] {
  const points = Array.from(value);
  const misses = [
    `${value} `,
    `${value}\\`,
    ` ${value}`,
    points.slice(0, -1).join(''),
    value.toUpperCase(),
    value.toLowerCase(),
    value.normalize('NFD'),
    value.replace(/\\/g, '\\\\'),
    value.replace(/'/g, "''"),
  ];
  return [...new Set(misses)].filter((m) => m !== value);
}

/**
 * A compare-and-delete (`apply` delete with `ifValue`) of every {@link ODD_STRINGS} value: each
 * near miss (a trailing space — PAD SPACE collations ignore it —, another case, another Unicode
 * normalisation, an escaped backslash or quote) answers false and leaves the record, the exact
 * value deletes it; in batches of one and of many, one and several ops per key.
 */
export async function expectOddCompareDelete(store: Store, base: string): Promise<void> {
  const keys = ODD_STRINGS.map((_, i) => `${base}/${String(i).padStart(2, '0')}`);
  const values = [...ODD_STRINGS];
  const putAll = keys.map((key, i): WriteOp => ({ op: 'put', key, value: values[i]! }));
  expect(await store.apply(putAll)).toEqual(putAll.map(() => true));
  // One near miss per key, then all of them (several per key), then one by one.
  const first = keys.map((key, i): WriteOp => ({ op: 'delete', key, ifValue: nearMisses(values[i]!)[0]! }));
  expect(await store.apply(first)).toEqual(first.map(() => false));
  const all = keys.flatMap((key, i) =>
    nearMisses(values[i]!).map((ifValue): WriteOp => ({ op: 'delete', key, ifValue })),
  );
  expect(await store.apply(all)).toEqual(all.map(() => false));
  for (const [i, key] of keys.entries()) {
    for (const ifValue of nearMisses(values[i]!).slice(0, 3)) {
      expect(await store.apply([{ op: 'delete', key, ifValue }]), JSON.stringify(ifValue)).toEqual([false]);
    }
  }
  expect(await store.getMany(keys)).toEqual(values);
  // The exact value: alone for the first half, in one batch for the rest.
  const half = Math.ceil(keys.length / 2);
  for (const [i, key] of keys.slice(0, half).entries()) {
    expect(
      await store.apply([{ op: 'delete', key, ifValue: values[i]! }]),
      JSON.stringify(values[i]),
    ).toEqual([true]);
  }
  const rest = keys.slice(half).map((key, i): WriteOp => ({ op: 'delete', key, ifValue: values[half + i]! }));
  expect(await store.apply(rest)).toEqual(rest.map(() => true));
  expect(await store.getMany(keys)).toEqual(keys.map(() => null));
}
