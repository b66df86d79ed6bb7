/**
 * BoundedMysqlPool (openStore's own MySQL/MariaDB pool) on a stand-in for mysql2's pool: what
 * happens to a connection whose statement gets no answer, or that comes too late. The real
 * half-open connection is tested through the fault proxy (test/fault-proxy.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { BoundedMysqlPool, type RawMysqlPool } from '../src/store/sql/mysql/bounded-pool.js';

interface FakeConnection {
  released: number;
  destroyed: number;
  answer: (() => void) | undefined;
}

type Callback = (err: Error | null, result?: unknown, fields?: unknown) => void;

/**
 * A callback-style pool (as mysql2's, which BoundedMysqlPool wraps) whose connections answer a
 * statement only when told to (`answer`), at once with `instant`, or with an error with `fail`.
 */
function fakePool(options: { instant?: boolean; connectAfterMs?: number; fail?: boolean } = {}) {
  const connections: FakeConnection[] = [];
  const pool: RawMysqlPool = {
    getConnection(cb) {
      const hand = () => {
        const state: FakeConnection = { released: 0, destroyed: 0, answer: undefined };
        connections.push(state);
        const statement = (_sql: string, _values: unknown, done: Callback) => {
          const reply = () => (options.fail ? done(new Error('ER_BAD')) : done(null, [{ ok: 1 }], []));
          if (options.instant || options.fail) setImmediate(reply);
          else state.answer = reply;
        };
        cb(null, {
          query: statement,
          execute: statement,
          release: () => {
            state.released++;
          },
          destroy: () => {
            state.destroyed++;
          },
        });
      };
      if (options.connectAfterMs) setTimeout(hand, options.connectAfterMs);
      else setImmediate(hand);
    },
    end: (cb) => cb(null),
  };
  return { pool, connections };
}

describe('BoundedMysqlPool', () => {
  it('answers within the bound: the connection goes back to the pool', async () => {
    const { pool, connections } = fakePool({ instant: true });
    const bounded = new BoundedMysqlPool(pool, 200);
    expect(await bounded.execute('SELECT 1', [])).toEqual([[{ ok: 1 }], []]);
    expect(await bounded.query('SELECT 1', [])).toEqual([[{ ok: 1 }], []]);
    expect(connections.map((c) => [c.released, c.destroyed])).toEqual([
      [1, 0],
      [1, 0],
    ]);
  });

  it('no answer within the bound: the call fails and the connection is destroyed, never released', async () => {
    const { pool, connections } = fakePool();
    const bounded = new BoundedMysqlPool(pool, 100);
    const started = performance.now();
    await expect(bounded.execute('SELECT 1', [])).rejects.toThrow(/no answer within 100 ms/);
    expect(performance.now() - started).toBeGreaterThanOrEqual(99);
    // The answer that comes after the timeout changes nothing.
    connections[0]!.answer?.();
    await new Promise((r) => setTimeout(r, 20));
    expect(connections[0]).toMatchObject({ released: 0, destroyed: 1 });
  });

  it('a connection handed out by getConnection: a timed-out statement destroys it once, whatever the caller does next', async () => {
    const { pool, connections } = fakePool();
    const conn = await new BoundedMysqlPool(pool, 100).getConnection();
    await expect(conn.query('SELECT 1')).rejects.toThrow(/no answer/);
    await expect(conn.query('ROLLBACK')).rejects.toThrow(/given up/);
    conn.release();
    conn.destroy?.();
    expect(connections[0]).toMatchObject({ released: 0, destroyed: 1 });
  });

  it('waits for a pooled connection at most the bound, and releases one that comes later', async () => {
    const { pool, connections } = fakePool({ instant: true, connectAfterMs: 250 });
    const bounded = new BoundedMysqlPool(pool, 100);
    await expect(bounded.query('SELECT 1', [])).rejects.toThrow(/mysql connection got no answer/);
    await new Promise((r) => setTimeout(r, 300));
    expect(connections[0]).toMatchObject({ released: 1, destroyed: 0 });
  });

  it('a statement that fails: the error reaches the caller and the connection goes back to the pool', async () => {
    const { pool, connections } = fakePool({ fail: true });
    const bounded = new BoundedMysqlPool(pool, 200);
    await expect(bounded.execute('SELECT 1', [])).rejects.toThrow('ER_BAD');
    await expect(bounded.query('SELECT 1', [])).rejects.toThrow('ER_BAD');
    expect(connections.map((c) => [c.released, c.destroyed])).toEqual([
      [1, 0],
      [1, 0],
    ]);
  });

  it('the statement gets the whole bound of its own after a slow wait for the connection', async () => {
    const { pool, connections } = fakePool({ connectAfterMs: 70 });
    const bounded = new BoundedMysqlPool(pool, 100);
    const call = bounded.execute('SELECT 1', []);
    await new Promise((r) => setTimeout(r, 70 + 60)); // 130 ms after the call, 60 ms into the statement
    expect(connections).toHaveLength(1);
    connections[0]!.answer?.();
    await expect(call).resolves.toEqual([[{ ok: 1 }], []]);
    expect(connections[0]).toMatchObject({ released: 1, destroyed: 0 });
  });

  it('withBound: the same pool with a longer bound (the migration)', async () => {
    const { pool, connections } = fakePool();
    const long = new BoundedMysqlPool(pool, 50).withBound(400);
    const call = long.execute('SELECT GET_LOCK(?, ?)', []);
    await new Promise((r) => setTimeout(r, 150));
    connections[0]!.answer?.();
    await expect(call).resolves.toEqual([[{ ok: 1 }], []]);
    expect(connections[0]).toMatchObject({ released: 1, destroyed: 0 });
  });
});
