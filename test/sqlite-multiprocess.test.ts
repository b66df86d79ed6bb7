import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../src/store/sqlite.js';
import { spawnTsx, type TsxChild } from './harness/child.js';
import { expectHistoryHolds } from './harness/history.js';

const worker = fileURLToPath(new URL('./fixtures/sqlite-worker.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'oncely-sqlite-mp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Child = TsxChild;

function start(args: string[]): Child {
  return spawnTsx(worker, args);
}

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the child processes');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('sqlite shared by several processes', () => {
  it('keeps exact counts and strictly increasing tokens: 4 processes, 2 locks', async () => {
    const file = join(dir, 'hammer.db');
    const rounds = 25;
    const names = ['alpha', 'beta'];
    const children = Array.from({ length: 4 }, (_, i) =>
      start([file, 'hammer', String(i), String(rounds), names.join(',')]),
    );
    const codes = await Promise.all(children.map((c) => c.exited));
    expect(codes, children.map((c) => c.stderr()).join('\n')).toEqual([0, 0, 0, 0]);

    const store = new SqliteStore({ path: file });
    for (const name of names) {
      const state = JSON.parse((await store.get(`state:${name}`))!) as { count: number; tokens: number[] };
      expect(state.count).toBe(children.length * rounds);
      expect(state.tokens).toHaveLength(children.length * rounds);
      for (let i = 1; i < state.tokens.length; i++)
        expect(state.tokens[i]!).toBeGreaterThan(state.tokens[i - 1]!);
      // The history checker's fenced-sink check over the record's writes, in holding order.
      expectHistoryHolds({
        records: [],
        jobs: [],
        writes: state.tokens.map((token) => ({ resource: `state:${name}`, token, accepted: true })),
      });
    }
    await store.close();
  }, 120_000);

  it('never repeats a token nor overlaps leases while short leases churn and get swept', async () => {
    const file = join(dir, 'churn.db');
    const seed = new SqliteStore({ path: file });
    await seed.migrate();
    await seed.close();
    const children = Array.from({ length: 4 }, (_, i) => start([file, 'churn', String(i), '1500']));
    const codes = await Promise.all(children.map((c) => c.exited));
    expect(codes, children.map((c) => c.stderr()).join('\n')).toEqual([0, 0, 0, 0]);
    const results = children.map(
      (c) =>
        JSON.parse(c.lines.find((l) => l.startsWith('{'))!) as {
          grants: { key: string; token: number; acquiredAt: number; expiresAt: number }[];
          swept: number;
        },
    );
    const grants = results.flatMap((r) => r.grants);
    expect(new Set(grants.map((g) => g.token)).size).toBe(grants.length);
    expect(results.reduce((n, r) => n + r.swept, 0)).toBeGreaterThan(0);
    for (const key of ['x', 'y']) {
      const held = grants.filter((g) => g.key === key).sort((a, b) => a.token - b.token);
      expect(held.length).toBeGreaterThan(10);
      // In token order each grant starts (store clock) no earlier than the previous lease ended.
      for (let i = 1; i < held.length; i++)
        expect(held[i]!.acquiredAt).toBeGreaterThanOrEqual(held[i - 1]!.expiresAt);
    }
  }, 120_000);

  it('grants exactly one of 16 processes racing for one name', async () => {
    const file = join(dir, 'race.db');
    const seed = new SqliteStore({ path: file });
    await seed.migrate();
    await seed.close();
    const children = Array.from({ length: 16 }, (_, i) => start([file, 'race', String(i), 'the-one']));
    try {
      await until(() => children.every((c) => c.lines.includes('ready')), 60_000);
      for (const c of children) c.process.stdin!.write('go\n');
      const codes = await Promise.all(children.map((c) => c.exited));
      expect(codes, children.map((c) => c.stderr()).join('\n')).toEqual(children.map(() => 0));
    } finally {
      for (const c of children) if (c.process.exitCode === null) c.process.kill();
    }
    const results = children.map(
      (c) => JSON.parse(c.lines.find((l) => l.startsWith('{'))!) as { won: boolean },
    );
    expect(results.filter((r) => r.won)).toHaveLength(1);
  }, 120_000);
});
