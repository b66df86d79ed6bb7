/**
 * What the server saw, the same way for every system on it (cumulative; callers take differences):
 *
 * - PostgreSQL, for the run's own database (`pg_stat_database`): rows written = `tup_inserted +
 *   tup_updated + tup_deleted`, rows read = `tup_returned` (rows scanned plus index entries
 *   returned). PostgreSQL publishes a backend's counts at most once a second while it is busy
 *   and within about 10 s once it goes idle, so readers wait that long after a burst.
 * - Redis, the whole server (`INFO`): writes = calls of commands flagged `write` (`INFO
 *   commandstats` counts the commands Lua scripts call too, so a BullMQ script that writes six
 *   keys counts six), reads = key lookups (`keyspace_hits + keyspace_misses`).
 */
import { Redis } from 'ioredis';
import pg from 'pg';

export interface ServerCounts {
  written: number;
  read: number;
}

export interface ServerStats {
  /** e.g. `PostgreSQL 15.20`. */
  version: string;
  writtenUnit: string;
  readUnit: string;
  read(): Promise<ServerCounts>;
  close(): Promise<void>;
}

export async function postgresStats(adminUrl: string, database: string): Promise<ServerStats> {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on('error', () => {}); // a server stopping under it; queries still reject
  await client.connect();
  const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
  return {
    version: `PostgreSQL ${rows[0]?.server_version ?? '?'}`,
    writtenUnit: 'rows inserted + updated + deleted',
    readUnit: 'rows read (tup_returned)',
    async read() {
      const r = await client.query<{ written: string; read: string }>(
        `SELECT tup_inserted + tup_updated + tup_deleted AS written, tup_returned AS read
         FROM pg_stat_database WHERE datname = $1`,
        [database],
      );
      const row = r.rows[0];
      return { written: Number(row?.written ?? Number.NaN), read: Number(row?.read ?? Number.NaN) };
    },
    close: () => client.end(),
  };
}

function infoFields(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) out.set(line.slice(0, i), line.slice(i + 1));
  }
  return out;
}

export async function redisStats(url: string): Promise<ServerStats> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {}); // a server stopping under it; commands still reject
  const server = infoFields(await redis.info('server'));
  // [name, arity, flags, …] per command.
  const commands = (await redis.call('COMMAND')) as [string, number, string[]][];
  const writes = new Set(commands.filter((c) => c[2].includes('write')).map((c) => c[0].toLowerCase()));
  return {
    version: `Redis ${server.get('redis_version') ?? '?'}`,
    writtenUnit: 'write commands (script-internal ones included)',
    readUnit: 'key lookups (keyspace hits + misses)',
    async read() {
      const stats = infoFields(await redis.info('stats'));
      let written = 0;
      for (const [key, value] of infoFields(await redis.info('commandstats'))) {
        const name = key.replace(/^cmdstat_/, '').split('|')[0]!;
        const calls = /calls=(\d+)/.exec(value);
        if (calls && writes.has(name)) written += Number(calls[1]);
      }
      const read = Number(stats.get('keyspace_hits')) + Number(stats.get('keyspace_misses'));
      return { written, read };
    },
    close: async () => {
      await redis.quit();
    },
  };
}
