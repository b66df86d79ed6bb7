/**
 * Vitest global setup: provides every test file with a server per backend.
 *
 * - `ONCELY_TEST_POSTGRES_URL`, `ONCELY_TEST_MYSQL_URL`, `ONCELY_TEST_REDIS_URL`,
 *   `ONCELY_TEST_ETCD_URL` point at servers
 *   you already run; otherwise a throwaway server is started from the installed binaries.
 * - With `CI=true` a backend that cannot be started fails the run. Without it, its tests are
 *   skipped and one loud line says why.
 */
import type { TestProject } from 'vitest/node';
import type { ProvidedBackend, ServerBackend } from './backends.js';
import { type RunningServer, startEtcd, startMariadb, startPostgres, startRedis } from './servers.js';

const STARTERS: Record<ServerBackend, { env: string; start: () => Promise<RunningServer> }> = {
  postgres: { env: 'ONCELY_TEST_POSTGRES_URL', start: startPostgres },
  mysql: { env: 'ONCELY_TEST_MYSQL_URL', start: startMariadb },
  redis: { env: 'ONCELY_TEST_REDIS_URL', start: startRedis },
  etcd: { env: 'ONCELY_TEST_ETCD_URL', start: startEtcd },
};

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const running: RunningServer[] = [];
  const provided = {} as Record<ServerBackend, ProvidedBackend>;
  const ci = process.env.CI === 'true';
  const failures: string[] = [];
  await Promise.all(
    (Object.keys(STARTERS) as ServerBackend[]).map(async (name) => {
      const { env, start } = STARTERS[name];
      const given = process.env[env];
      if (given) {
        provided[name] = { url: given };
        return;
      }
      try {
        const server = await start();
        running.push(server);
        provided[name] = { url: server.url };
      } catch (err) {
        const reason = (err as Error).message.split('\n').slice(0, 6).join(' | ');
        provided[name] = { error: reason };
        failures.push(`${name}: ${reason}`);
      }
    }),
  );
  const teardown = async () => {
    await Promise.all(running.map((s) => s.stop().catch(() => {})));
  };
  if (failures.length > 0) {
    if (ci) {
      await teardown();
      throw new Error(`CI=true and test servers could not be started:\n${failures.join('\n')}`);
    }
    for (const f of failures)
      console.warn(`\n!!! SKIPPING ${f.split(':')[0]} TESTS — server could not be started: ${f}\n`);
  }
  project.provide('oncelyBackends', provided);
  // Child processes spawned by tests (multi-process tests, CLI) find the servers here too.
  for (const [name, p] of Object.entries(provided)) {
    if (p.url) process.env[STARTERS[name as ServerBackend].env] = p.url;
  }
  return teardown;
}
