/**
 * Counts requests each backend's server (or SQLite statement) sees, so the bench can report how
 * many round trips one lock cycle costs — the usual reason a wrapper is slower than hand-written
 * SQL. Counters are cumulative; callers take differences.
 *
 * - postgres: calls of `pg.Client.prototype.query` (every pool query goes through it; one call is
 *   one round trip in the extended protocol)
 * - mysql: `query`/`execute` calls on mysql2 connections (a multi-statement query is one round
 *   trip; the server's `Questions` would count each of its statements)
 * - redis: commands ioredis sends, a pipeline (or MULTI) counting once (the server's own count
 *   would include the commands scripts call)
 * - sqlite: better-sqlite3 statement executions (`run`/`get`/`all`/`iterate`)
 *
 * Each driver is imported only when its counter is asked for, so a process that counts one
 * backend does not load the others (the scale bench reports its processes' memory).
 *
 * A package whose range for `pg` the project's own pin does not meet gets a copy of its own
 * (pg-boss 12 wants pg ^8.23.1, the project pins 8.16.3): name it in `pgFrom` and the `pg` that
 * package resolves is counted too, when it is another module than the project's.
 */
import { createRequire } from 'node:module';
import type { BackendName } from './servers.js';

export interface RequestCounter {
  /** What is counted, for the report. */
  readonly unit: string;
  /** Cumulative count (its own probe excluded). */
  read(): Promise<number>;
  close(): Promise<void>;
}

type AnyFn = (...args: unknown[]) => unknown;

/** Wraps `methods` of `proto` to count calls until `close()`. */
function countCalls(
  proto: Record<string, unknown>,
  methods: readonly string[],
): { count: () => number; restore: () => void } {
  let calls = 0;
  const originals = new Map<string, AnyFn>();
  for (const m of methods) {
    const original = proto[m] as AnyFn;
    originals.set(m, original);
    proto[m] = function (this: unknown, ...args: unknown[]) {
      calls++;
      return original.apply(this, args);
    };
  }
  return {
    count: () => calls,
    restore: () => {
      for (const [m, fn] of originals) proto[m] = fn;
    },
  };
}

export async function requestCounter(
  backend: BackendName,
  pgFrom: readonly string[] = [],
): Promise<RequestCounter | undefined> {
  switch (backend) {
    case 'memory':
      return undefined;
    case 'postgres': {
      const { default: pg } = await import('pg');
      const protos = new Set<object>([pg.Client.prototype]);
      const here = createRequire(import.meta.url);
      for (const pkg of pgFrom) {
        const copy = createRequire(here.resolve(pkg))('pg') as typeof pg;
        protos.add(copy.Client.prototype);
      }
      const patches = [...protos].map((p) => countCalls(p as Record<string, unknown>, ['query']));
      return {
        unit: 'pg queries',
        read: async () => patches.reduce((n, p) => n + p.count(), 0),
        close: async () => {
          for (const p of patches) p.restore();
        },
      };
    }
    case 'sqlite': {
      const { default: Database } = await import('better-sqlite3');
      const probe = new Database(':memory:');
      const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, unknown>;
      probe.close();
      const patch = countCalls(proto, ['run', 'get', 'all', 'iterate']);
      return {
        unit: 'SQLite statements',
        read: async () => patch.count(),
        close: async () => patch.restore(),
      };
    }
    case 'mysql': {
      // Client side: the server's `Questions` counts each statement of a multi-statement query.
      // mysql2's typings declare Connection as an interface; at run time it is a class whose parent
      // (BaseConnection) pooled connections extend too.
      const { default: mysqlCore } = await import('mysql2');
      const { Connection } = mysqlCore as unknown as { Connection: { prototype: object } };
      const base = Object.getPrototypeOf(Connection.prototype) as Record<string, unknown>;
      const patch = countCalls(base, ['query', 'execute']);
      return {
        unit: 'mysql2 query/execute calls',
        read: async () => patch.count(),
        close: async () => patch.restore(),
      };
    }
    case 'redis': {
      // Client side: script-internal calls would inflate the server's command count.
      const { Redis } = await import('ioredis');
      const proto = Redis.prototype as unknown as Record<string, unknown>;
      const original = proto['sendCommand'] as AnyFn;
      const pipelines = new WeakSet<object>();
      let trips = 0;
      proto['sendCommand'] = function (this: unknown, ...args: unknown[]) {
        const stream = args[1] as { isPipeline?: boolean } | undefined;
        if (!stream?.isPipeline) trips++;
        else if (!pipelines.has(stream)) {
          pipelines.add(stream);
          trips++;
        }
        return original.apply(this, args);
      };
      return {
        unit: 'ioredis round trips (a pipeline or MULTI counts once)',
        read: async () => trips,
        close: async () => {
          proto['sendCommand'] = original;
        },
      };
    }
  }
}
