/**
 * Read-only commands create nothing on a server store either: `oncely status --store postgres://…
 * --prefix typo_` used to migrate (create `typo_leases`, `typo_records`, … — or the `{typo_}schema`
 * key on Redis, `typo_/schema` and `typo_/fence` on etcd) and only then refuse. Now the schema is
 * looked for without creating anything: absent, the command fails (exit 1) naming the URL, the
 * prefix and the other oncely prefixes the server has, and nothing under the typo exists after.
 * Runs the built CLI (`npm run build` first).
 */
import { randomBytes } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactUrl } from '../src/core/redact.js';
import { createScheduler, openStore } from '../src/index.js';
import { requireBuiltCli, runCli } from './fixtures/cli/cli.js';
import { type ServerBackend, serverBackend, testPrefix } from './harness/backends.js';

beforeAll(() => requireBuiltCli());

/** A Redis database no other test uses, so the scan for other prefixes there is complete and short. */
const REDIS_DB = 11;

interface Server {
  /** The store URL the commands get. */
  url(raw: string): string;
  /** Every table (SQL) or key that starts with `prefix`. */
  under(raw: string, prefix: string): Promise<string[]>;
  /** Removes what a store with `prefix` created. */
  drop(raw: string, prefix: string): Promise<void>;
}

const SERVERS: Record<ServerBackend, Server> = {
  postgres: {
    url: (raw) => raw,
    async under(raw, prefix) {
      const client = new pg.Client({ connectionString: raw });
      await client.connect();
      try {
        const { rows } = await client.query<{ relname: string }>(
          'SELECT relname FROM pg_class WHERE left(relname, length($1)) = $1',
          [prefix.toLowerCase()],
        );
        return rows.map((r) => r.relname);
      } finally {
        await client.end();
      }
    },
    async drop(raw, prefix) {
      const client = new pg.Client({ connectionString: raw });
      await client.connect();
      await client.query(`DROP TABLE IF EXISTS ${prefix}leases, ${prefix}records, ${prefix}meta`);
      await client.query(`DROP SEQUENCE IF EXISTS ${prefix}fence`);
      await client.end();
    },
  },
  mysql: {
    url: (raw) => raw,
    async under(raw, prefix) {
      const conn = await mysql.createConnection({ uri: raw });
      try {
        const [rows] = await conn.query(
          'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND LEFT(table_name, ?) = ?',
          [prefix.length, prefix],
        );
        return (rows as { t: string }[]).map((r) => r.t);
      } finally {
        await conn.end();
      }
    },
    async drop(raw, prefix) {
      const conn = await mysql.createConnection({ uri: raw });
      await conn.query(
        `DROP TABLE IF EXISTS ${prefix}leases, ${prefix}records, ${prefix}meta, ${prefix}fence`,
      );
      await conn.end();
    },
  },
  redis: {
    url: (raw) => `${raw.replace(/\/\d*$/, '')}/${REDIS_DB}`,
    async under(raw, prefix) {
      const client = new Redis(`${raw.replace(/\/\d*$/, '')}/${REDIS_DB}`, { maxRetriesPerRequest: 1 });
      try {
        return await client.keys(`*${prefix}*`);
      } finally {
        client.disconnect();
      }
    },
    async drop(raw, prefix) {
      const client = new Redis(`${raw.replace(/\/\d*$/, '')}/${REDIS_DB}`, { maxRetriesPerRequest: 1 });
      const keys = await client.keys(`{${prefix}}*`);
      if (keys.length > 0) await client.del(...keys);
      client.disconnect();
    },
  },
  etcd: {
    url: (raw) => raw,
    async under(raw, prefix) {
      const client = new Etcd3({ hosts: raw.replace(/^etcd:/, 'http:') });
      try {
        return await client.getAll().prefix(prefix).keys();
      } finally {
        client.close();
      }
    },
    async drop(raw, prefix) {
      const client = new Etcd3({ hosts: raw.replace(/^etcd:/, 'http:') });
      await client.delete().prefix(`${prefix}/`);
      client.close();
    },
  },
};

for (const name of Object.keys(SERVERS) as ServerBackend[]) {
  const target = serverBackend(name);
  const server = SERVERS[name];
  // Lower case: PostgreSQL folds unquoted table names; 'a' sorts before the suites' 't_' prefixes.
  const seen = `a_seen_${randomBytes(4).toString('hex')}_`;

  describe.skipIf(target.skip !== undefined)(
    `read-only commands on ${name} under a prefix with no store`,
    () => {
      const raw = target.url!;
      const url = server.url(raw);
      beforeAll(async () => {
        const store = await openStore(url, { prefix: seen });
        await createScheduler({ store, logger: false }).pause('some-job');
        await store.close();
      }, 30_000);
      afterAll(() => server.drop(raw, seen));

      it('refuse, name the prefixes the server has, and create nothing', async () => {
        const typo = testPrefix('typo');
        const [status, locks] = await Promise.all([
          runCli(['status', '--store', url, '--prefix', typo]),
          runCli(['locks', '--json', '--store', url, '--prefix', typo]),
        ]);
        expect(await server.under(raw, typo)).toEqual([]);
        for (const r of [status, locks]) {
          expect(r.code, r.stderr).toBe(1);
          expect(r.stdout).toBe('');
          expect(r.stderr).toContain(`${redactUrl(url)} has no oncely store under prefix "${typo}"`);
          expect(r.stderr).toContain(`--prefix ${seen}`);
          expect(r.stderr).toContain('check --store and --prefix');
          expect(r.stderr).not.toContain('oncely-test-pw');
        }
      });

      it('still answer under the prefix of a store', async () => {
        const r = await runCli(['status', '--json', '--store', url, '--prefix', seen]);
        expect(r.code, r.stderr).toBe(0);
        // A pause of a job no node defined is a record (so the store is not empty), not a listed job.
        expect(JSON.parse(r.stdout)).toEqual({ jobs: [], nodes: [], pausedSchedules: [] });
      });
    },
  );
}
