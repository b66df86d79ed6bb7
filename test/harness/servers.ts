/**
 * Throwaway database servers for tests — testcontainers without Docker. Each `start*` function
 * starts a fresh server process from the binaries installed on this machine, in its own temp
 * directory on a free loopback port, waits until it accepts connections, and returns its URL and a
 * `stop` that kills it and removes the directory. Nothing touches the machine's own services.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface RunningServer {
  url: string;
  stop(): Promise<void>;
  /**
   * Stops the server and starts it again on the same port and data directory (a store restart
   * for fault tests). PostgreSQL keeps its data; Redis only when started with `persist`.
   */
  restart?(): Promise<void>;
}

/** Stops a server process and waits for its exit (PostgreSQL: SIGINT is its fast shutdown). */
async function halt(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** A TCP port nobody listens on right now (the kernel picks it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts TCP connections on the port, or rejects after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child && child.exitCode !== null)
      throw new Error(`server exited with code ${child.exitCode} before listening`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = new Socket();
      socket.setTimeout(500);
      socket.once('connect', () => resolve(true));
      socket.once('error', () => resolve(false));
      socket.once('timeout', () => resolve(false));
      socket.connect(port, '127.0.0.1');
    }).finally(() => {});
    if (open) return;
    if (Date.now() > deadline)
      throw new Error(`nothing listened on 127.0.0.1:${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function tempDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `oncely-${label}-`));
  chmodSync(dir, 0o777);
  return dir;
}

/** Ends a child process: SIGTERM, then SIGKILL after `graceMs`. */
async function kill(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

function collectOutput(child: ChildProcess): () => string {
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    output = (output + d.toString()).slice(-4000);
  });
  child.stderr?.on('data', (d: Buffer) => {
    output = (output + d.toString()).slice(-4000);
  });
  return () => output;
}

/** Starts a server process and waits until it listens on `port`; if it does not, kills it and says why. */
async function spawnServer(
  name: string,
  command: string,
  args: string[],
  listen: { port: number; timeoutMs: number },
): Promise<ChildProcess> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = collectOutput(child);
  try {
    await waitForPort(listen.port, listen.timeoutMs, child);
  } catch (err) {
    await kill(child);
    throw new Error(`${name} did not start: ${(err as Error).message}\n${output()}`);
  }
  return child;
}

function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root))
    throw new Error('PostgreSQL binaries not found under /usr/lib/postgresql (apt-get install postgresql)');
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  const dir = versions.map((v) => join(root, v, 'bin')).find((d) => existsSync(join(d, 'initdb')));
  if (!dir) throw new Error('no initdb under /usr/lib/postgresql/*/bin');
  return dir;
}

/** As root, initdb refuses to run: run PostgreSQL tools as the `postgres` system user. */
function asPostgres(command: string, args: string[]): [string, string[]] {
  if (process.getuid?.() === 0) return ['runuser', ['-u', 'postgres', '--', command, ...args]];
  return [command, args];
}

/** PostgreSQL with password (scram) auth: `postgres://postgres:<pw>@127.0.0.1:<port>/postgres`. */
export async function startPostgres(): Promise<RunningServer> {
  const bin = postgresBinDir();
  const dir = tempDir('pg');
  const data = join(dir, 'data');
  const password = 'oncely-test-pw';
  const pwfile = join(dir, 'pw');
  writeFileSync(pwfile, password, { mode: 0o644 });
  const [initCmd, initArgs] = asPostgres(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '-A',
    'scram-sha-256',
    `--pwfile=${pwfile}`,
    '--no-sync',
    '-E',
    'UTF8',
    '--locale=C',
  ]);
  await run(initCmd, initArgs, { timeout: 120_000 });
  const port = await freePort();
  const [cmd, args] = asPostgres(join(bin, 'postgres'), [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=300',
    // A fast shutdown waits for "dead-end" backends, which PostgreSQL does not signal: one forked
    // for a connection made while the server was starting or stopping waits for its startup
    // packet for up to authentication_timeout (default 60 s). Through a stalled fault-proxy link
    // that packet never comes, and a chaos "store restart" became a 40 s outage (restart()'s
    // SIGINT, then SIGQUIT, then SIGKILL) — the 60 s CI chaos run then saw 29 occurrences.
    '-c',
    'authentication_timeout=5s',
  ]);
  let child = await spawnServer('PostgreSQL', cmd, args, { port, timeoutMs: 60_000 });
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  // The port opens before recovery ends: until then connections are refused with "the database
  // system is starting up" (seen on a busy machine). Ready is when a query answers.
  await untilQueryAnswers(url, 60_000).catch(async (err: unknown) => {
    await kill(child);
    throw err;
  });
  return {
    url,
    async stop() {
      await kill(child);
      rmSync(dir, { recursive: true, force: true });
    },
    async restart() {
      // Fast shutdown (SIGINT) goes to the postmaster itself: as root `child` is runuser, which
      // does not pass SIGINT on.
      const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const alive = () => {
        try {
          process.kill(postmaster, 0);
          return true;
        } catch {
          return false;
        }
      };
      const gone = async (ms: number) => {
        for (const end = Date.now() + ms; alive() && Date.now() < end; )
          await new Promise((resolve) => setTimeout(resolve, 50));
        return !alive();
      };
      // The new server may start only once the old postmaster is gone: started beside it, it finds
      // the port taken and the data directory locked, and the old one then closes the port (seen
      // in a chaos run on a busy machine: "did not answer within 60000 ms"). Fast shutdown first,
      // then immediate (SIGQUIT), then SIGKILL.
      process.kill(postmaster, 'SIGINT');
      if (!(await gone(30_000))) {
        process.kill(postmaster, 'SIGQUIT');
        if (!(await gone(10_000))) process.kill(postmaster, 'SIGKILL');
        await gone(5_000);
      }
      await halt(child, 'SIGKILL');
      child = await spawnServer('PostgreSQL', cmd, args, { port, timeoutMs: 60_000 });
      await untilQueryAnswers(url, 60_000);
    },
  };
}

/** Resolves once `SELECT 1` answers on `url`; rejects with the last error after `timeoutMs`. */
async function untilQueryAnswers(url: string, timeoutMs: number): Promise<void> {
  const { default: pg } = await import('pg');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`PostgreSQL did not answer within ${timeoutMs} ms: ${String(err)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      await client.end().catch(() => {});
    }
  }
}

/** MariaDB (or MySQL) with a password user: `mysql://oncely:<pw>@127.0.0.1:<port>/oncely_test`. */
export async function startMariadb(): Promise<RunningServer> {
  const dir = tempDir('mariadb');
  const data = join(dir, 'data');
  const socket = join(dir, 'mysqld.sock');
  const user = process.getuid?.() === 0 ? 'root' : (process.env.USER ?? 'root');
  await run(
    'mariadb-install-db',
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--user=${user}`,
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
      '--skip-name-resolve',
    ],
    { timeout: 120_000 },
  );
  const port = await freePort();
  const child = await spawnServer(
    'MariaDB',
    'mariadbd',
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--socket=${socket}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--user=${user}`,
      '--skip-name-resolve',
      '--innodb-flush-log-at-trx-commit=2',
      '--innodb-buffer-pool-size=128M',
      '--max-connections=400',
      '--skip-log-bin',
      `--pid-file=${join(dir, 'mysqld.pid')}`,
    ],
    { port, timeoutMs: 60_000 },
  );
  const password = 'oncely-test-pw';
  // root may only log in through the socket; create a password user for TCP, as apps use.
  await run(
    'mariadb',
    [
      '--no-defaults',
      `--socket=${socket}`,
      '-uroot',
      '-e',
      `CREATE DATABASE oncely_test; CREATE USER 'oncely'@'127.0.0.1' IDENTIFIED BY '${password}'; ` +
        `GRANT ALL ON *.* TO 'oncely'@'127.0.0.1'; FLUSH PRIVILEGES;`,
    ],
    { timeout: 30_000 },
  );
  return {
    url: `mysql://oncely:${password}@127.0.0.1:${port}/oncely_test`,
    async stop() {
      await kill(child, 10_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Redis with the settings oncely requires (noeviction): `redis://127.0.0.1:<port>`. Nothing is
 * persisted, unless `persist` (an append-only file fsynced on every write, kept across `restart`).
 */
export async function startRedis(options: { persist?: boolean } = {}): Promise<RunningServer> {
  const dir = tempDir('redis');
  const port = await freePort();
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    options.persist ? 'yes' : 'no',
    ...(options.persist ? ['--appendfsync', 'always'] : []),
    '--dir',
    dir,
    '--maxmemory-policy',
    'noeviction',
    '--maxclients',
    '1000',
  ];
  let child = await spawnServer('Redis', 'redis-server', args, { port, timeoutMs: 30_000 });
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      await kill(child);
      rmSync(dir, { recursive: true, force: true });
    },
    async restart() {
      await halt(child, 'SIGTERM');
      child = await spawnServer('Redis', 'redis-server', args, { port, timeoutMs: 30_000 });
    },
  };
}

/**
 * etcd, one member, data in the temp dir: `etcd://127.0.0.1:<port>`. Its
 * limits are etcd's defaults (--max-txn-ops 128, --max-request-bytes 1.5 MiB), as users have them.
 */
export async function startEtcd(): Promise<RunningServer> {
  const dir = tempDir('etcd');
  const port = await freePort();
  let peerPort = await freePort();
  while (peerPort === port) peerPort = await freePort();
  const peer = `http://127.0.0.1:${peerPort}`;
  const client = `http://127.0.0.1:${port}`;
  const child = await spawnServer(
    'etcd',
    'etcd',
    [
      '--name',
      'oncely-test',
      '--data-dir',
      join(dir, 'data'),
      '--listen-client-urls',
      client,
      '--advertise-client-urls',
      client,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      `oncely-test=${peer}`,
      '--log-level',
      'warn',
    ],
    { port, timeoutMs: 30_000 },
  );
  return {
    url: `etcd://127.0.0.1:${port}`,
    async stop() {
      await kill(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
