/**
 * Removes what oncely's store created under the bench's own prefix, so a run against a server you
 * pointed it at (`ONCELY_BENCH_*_URL`) leaves nothing behind. The prefix is `bench_<random>_`, so
 * nothing else can match.
 */

import { Redis } from 'ioredis';
import mysql, { type RowDataPacket } from 'mysql2/promise';
import pg from 'pg';
import type { BackendName } from './servers.js';

export async function dropPrefixed(backend: BackendName, url: string, prefix: string): Promise<void> {
  if (!/^bench_[0-9a-f]+_$/.test(prefix)) throw new Error(`refusing to drop objects with prefix ${prefix}`);
  switch (backend) {
    case 'postgres': {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query<{ name: string; kind: string }>(
          `SELECT c.relname AS name, c.relkind AS kind FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'S') AND left(c.relname, $1) = $2`,
          [prefix.length, prefix],
        );
        for (const r of rows) {
          await client.query(`DROP ${r.kind === 'S' ? 'SEQUENCE' : 'TABLE'} IF EXISTS "${r.name}" CASCADE`);
        }
      } finally {
        await client.end();
      }
      return;
    }
    case 'mysql': {
      const conn = await mysql.createConnection({ uri: url });
      try {
        const [rows] = await conn.query<RowDataPacket[]>(
          `SELECT table_name AS name FROM information_schema.tables
           WHERE table_schema = DATABASE() AND LEFT(table_name, ?) = ?`,
          [prefix.length, prefix],
        );
        for (const r of rows) await conn.query(`DROP TABLE IF EXISTS \`${String(r['name'])}\``);
      } finally {
        await conn.end();
      }
      return;
    }
    case 'redis': {
      const redis = new Redis(url, { maxRetriesPerRequest: 1 });
      try {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          cursor = next;
          if (keys.length > 0) await redis.del(...keys);
        } while (cursor !== '0');
        // keys in hash tags, e.g. `{bench_…_}…`
        cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `{${prefix}*`, 'COUNT', 1000);
          cursor = next;
          if (keys.length > 0) await redis.del(...keys);
        } while (cursor !== '0');
      } finally {
        await redis.quit();
      }
      return;
    }
    default:
      return; // memory: nothing; sqlite: the temp directory goes away with the server
  }
}
