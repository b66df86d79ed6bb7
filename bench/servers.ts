/**
 * Where each backend's server comes from: `ONCELY_BENCH_*_URL` when set, otherwise a throwaway
 * server started from the installed binaries by the test harness (so the bench runs on a fresh
 * clone). SQLite gets a temp file, memory needs nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningServer, startMariadb, startPostgres, startRedis } from '../test/harness/servers.js';

export type BackendName = 'memory' | 'sqlite' | 'postgres' | 'mysql' | 'redis';
export const ALL_BACKENDS: readonly BackendName[] = ['memory', 'sqlite', 'postgres', 'mysql', 'redis'];

export interface BenchServer {
  /** A store URL for `openStore`. */
  url: string;
  /** Where the server came from, for the report. */
  origin: string;
  stop(): Promise<void>;
}

const SERVERS: Record<
  'postgres' | 'mysql' | 'redis',
  { env: string; start: () => Promise<RunningServer>; what: string }
> = {
  postgres: {
    env: 'ONCELY_BENCH_POSTGRES_URL',
    start: startPostgres,
    what: 'throwaway (fsync=off, synchronous_commit=off)',
  },
  mysql: {
    env: 'ONCELY_BENCH_MYSQL_URL',
    start: startMariadb,
    what: 'throwaway (innodb_flush_log_at_trx_commit=2)',
  },
  redis: { env: 'ONCELY_BENCH_REDIS_URL', start: startRedis, what: 'throwaway (no persistence)' },
};

/** Provides the server (or file) a backend runs against; rejects with the reason it is unavailable. */
export async function provision(backend: BackendName): Promise<BenchServer> {
  if (backend === 'memory') return { url: 'memory:', origin: '', stop: async () => {} };
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'oncely-bench-sqlite-'));
    return {
      url: `sqlite:${join(dir, 'bench.db')}`,
      origin: 'temp file',
      stop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const spec = SERVERS[backend];
  const given = process.env[spec.env];
  if (given) return { url: given, origin: `from ${spec.env}`, stop: async () => {} };
  const server = await spec.start();
  return { url: server.url, origin: spec.what, stop: () => server.stop() };
}

/** First line of an error, for an "unavailable: …" cell. */
export function reason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return (message.split('\n')[0] ?? message).slice(0, 200);
}
