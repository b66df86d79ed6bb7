/**
 * The package as a user gets it (issue 10): `npm pack` of this checkout, installed from the
 * tarball into an empty project with none of the optional peers (no driver, no vitest). Then:
 * - npm printed no EBADENGINE, and no installed package's `engines.node` excludes a Node version
 *   oncely's own `engines` allows (light-my-request is pinned in `dependencies` for that: its 6.8+
 *   pull cookie 2, which wants Node 22; a dependency of the root is what fastify dedupes to, where
 *   `overrides` would not reach a user's install);
 * - every subpath of package.json `exports` loads with a plain ESM `import()`;
 * - a store whose driver is absent fails only when used, with an `OncelyError` saying what to
 *   install; the memory store works;
 * - the `oncely` bin answers `--version` and `--help` through `npx`;
 * - the guides ship: every docs/*.md of this checkout is in the tarball, and the path `--help`
 *   names for the CLI guide is a file of the installed package (issue 31).
 * Packs the built `dist/` (`npm run build` first, as for the CLI tests); installs with
 * `--prefer-offline`, so the registry is asked only for what the npm cache lacks.
 */
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import semver from 'semver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, requireBuiltCli } from './fixtures/cli/cli.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'oncely-tarball-'));
const app = join(dir, 'app');
const own = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
  exports: Record<string, unknown>;
};

/** This process's environment without what `npm test` set for this package's own scripts. */
function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith('npm_package_') && !k.startsWith('npm_lifecycle_') && k !== 'INIT_CWD',
    ),
  );
}

async function npm(args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  return run('npm', args, { cwd, env: npmEnv(), maxBuffer: 64 * 1024 * 1024, timeout: 120_000 });
}

let install: { stdout: string; stderr: string };

beforeAll(async () => {
  requireBuiltCli();
  const packed = JSON.parse(
    (await npm(['pack', '--ignore-scripts', '--json', '--pack-destination', dir], ROOT)).stdout,
  ) as { filename: string }[];
  const tarball = join(dir, packed[0]!.filename);
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  install = await npm(['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], app);
}, 180_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every installed package.json under `node_modules` (nested ones and scoped ones too). */
function installedPackages(
  root: string,
): { path: string; name: string; version: string; engines?: { node?: string } }[] {
  const found: { path: string; name: string; version: string; engines?: { node?: string } }[] = [];
  const walk = (modules: string) => {
    if (!existsSync(modules)) return;
    for (const entry of readdirSync(modules)) {
      if (entry.startsWith('.')) continue;
      const dirs = entry.startsWith('@')
        ? readdirSync(join(modules, entry)).map((e) => join(modules, entry, e))
        : [join(modules, entry)];
      for (const d of dirs) {
        const file = join(d, 'package.json');
        if (!existsSync(file)) continue;
        found.push({ path: d, ...JSON.parse(readFileSync(file, 'utf8')) });
        walk(join(d, 'node_modules'));
      }
    }
  };
  walk(join(root, 'node_modules'));
  return found;
}

describe('oncely installed from its npm pack tarball', () => {
  it('installs without the optional peers, and nothing in the tree excludes a Node version oncely supports', () => {
    expect(`${install.stdout}\n${install.stderr}`).not.toMatch(/EBADENGINE/);
    const packages = installedPackages(app);
    const names = new Set(packages.map((p) => p.name));
    expect(names.has('oncely')).toBe(true);
    for (const peer of ['pg', 'mysql2', 'ioredis', 'etcd3', 'better-sqlite3', 'vitest'])
      expect(names).not.toContain(peer);
    // The oldest Node oncely's engines allow (20.0.0 for ">=20") must satisfy every package's engines.
    const oldest = semver.minVersion(own.engines.node)!.version;
    const excluding = packages
      .filter((p) => p.engines?.node !== undefined && !semver.satisfies(oldest, p.engines.node))
      .map((p) => `${p.name}@${p.version} wants node ${p.engines!.node}`);
    expect(excluding, `installed packages that exclude Node ${oldest}`).toEqual([]);
  });

  it('every subpath of "exports" imports with plain ESM; a missing driver fails only when used, as OncelyError', async () => {
    const subpaths = Object.keys(own.exports);
    const script = `
      const subpaths = ${JSON.stringify(subpaths)};
      const loaded = {};
      for (const sub of subpaths) {
        const spec = 'oncely' + sub.slice(1);
        try {
          const mod = sub.endsWith('.json') ? await import(spec, { with: { type: 'json' } }) : await import(spec);
          loaded[sub] = Object.keys(mod).sort();
        } catch (e) {
          loaded[sub] = ['failed: ' + (e && e.message)];
        }
      }
      const { OncelyError, openStore } = await import('oncely');
      const failure = async (make) => {
        try { await make(); return 'no error'; }
        catch (e) { return e instanceof OncelyError ? e.code + ': ' + e.message : 'not an OncelyError: ' + e; }
      };
      const { PostgresStore } = await import('oncely/postgres');
      const { MysqlStore } = await import('oncely/mysql');
      const { RedisStore } = await import('oncely/redis');
      const { EtcdStore } = await import('oncely/etcd');
      const { SqliteStore } = await import('oncely/sqlite');
      const { describeStore } = await import('oncely/testing');
      const used = {
        postgres: await failure(() => new PostgresStore({ connectionString: 'postgres://u:pw@127.0.0.1:1/db' })),
        openStorePostgres: await failure(() => openStore('postgres://u:pw@127.0.0.1:1/db')),
        mysql: await failure(() => new MysqlStore({ uri: 'mysql://u:pw@127.0.0.1:1/db' })),
        redis: await failure(() => new RedisStore({ url: 'redis://127.0.0.1:1' })),
        etcd: await failure(() => new EtcdStore({ url: 'etcd://127.0.0.1:1' })),
        sqlite: await failure(() => new SqliteStore({ path: 'x.db' })),
        openStoreSqlite: await failure(() => openStore('sqlite:./x.db')),
        describeStore: await failure(() => describeStore('x', async () => null)),
      };
      const store = await openStore('memory:');
      const lock = await store.tryLock({ name: 'tarball', lockAtMostFor: '5s' });
      const memory = { token: typeof lock?.token, released: await lock?.release() };
      await store.close();
      console.log(JSON.stringify({ loaded, used, memory }));
    `;
    writeFileSync(join(app, 'check.mjs'), script);
    const { stdout } = await run(process.execPath, ['check.mjs'], { cwd: app, timeout: 60_000 });
    const r = JSON.parse(stdout) as {
      loaded: Record<string, string[]>;
      used: Record<string, string>;
      memory: { token: string; released: boolean };
    };
    expect(Object.keys(r.loaded)).toEqual(subpaths);
    expect(r.loaded['.']).toEqual(
      expect.arrayContaining(['openStore', 'withLock', 'createScheduler', 'fireTimes']),
    );
    expect(r.loaded['./postgres']).toContain('PostgresStore');
    expect(r.loaded['./mysql']).toContain('MysqlStore');
    expect(r.loaded['./redis']).toContain('RedisStore');
    expect(r.loaded['./etcd']).toContain('EtcdStore');
    expect(r.loaded['./sqlite']).toContain('SqliteStore');
    expect(r.loaded['./memory']).toContain('MemoryStore');
    expect(r.loaded['./testing']).toContain('describeStore');
    expect(r.loaded['./package.json']).toEqual(['default']);
    // The NestJS integration is the one subpath that needs its optional peers to import at all
    // (Nest's decorators run at load); without them the import names what to install.
    expect(r.loaded['./nestjs']).toEqual([
      expect.stringMatching(/^failed: .*Cannot find package '(@nestjs\/|reflect-metadata)/),
    ]);
    const needs = (pkg: string) =>
      new RegExp(`^INVALID_ARGUMENT: .*needs the '${pkg}' package; install it with: npm install ${pkg}$`);
    expect(r.used['postgres']).toMatch(needs('pg'));
    expect(r.used['openStorePostgres']).toMatch(needs('pg'));
    expect(r.used['mysql']).toMatch(needs('mysql2'));
    expect(r.used['redis']).toMatch(needs('ioredis'));
    expect(r.used['etcd']).toMatch(needs('etcd3'));
    expect(r.used['sqlite']).toMatch(needs('better-sqlite3'));
    expect(r.used['openStoreSqlite']).toMatch(needs('better-sqlite3'));
    expect(r.used['describeStore']).toMatch(/^INVALID_ARGUMENT: describeStore runs in a vitest test file/);
    for (const message of Object.values(r.used)) expect(message).not.toContain('pw');
    expect(r.memory).toEqual({ token: 'number', released: true });
  });

  it('the oncely bin answers --version and --help through npx', async () => {
    const version = await run('npx', ['--no', '--', 'oncely', '--version'], { cwd: app, env: npmEnv() });
    expect(version.stdout.trim()).toBe(own.version);
    const help = await run('npx', ['--no', '--', 'oncely', '--help'], { cwd: app, env: npmEnv() });
    expect(help.stdout).toMatch(/^Usage: oncely /);
    for (const command of ['run', 'status', 'history', 'locks', 'dashboard'])
      expect(help.stdout).toContain(command);
    const docs = /^Docs: (\S+)/m.exec(help.stdout);
    expect(docs, 'a "Docs:" line in --help').not.toBeNull();
    expect(docs![1]).toBe(join(realpathSync(app), 'node_modules', 'oncely', 'docs', 'cli.md'));
    expect(existsSync(docs![1]!)).toBe(true);
  });

  it('ships every guide of docs/', () => {
    const guides = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));
    expect(guides).toEqual(expect.arrayContaining(['README.md', 'cli.md', 'scheduler.md']));
    const installed = join(app, 'node_modules', 'oncely', 'docs');
    const missing = guides.filter((f) => !existsSync(join(installed, f)));
    expect(missing, 'docs/*.md missing from the installed package').toEqual([]);
  });
});
