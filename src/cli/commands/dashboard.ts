/**
 * `oncely dashboard`: the web UI and JSON API on a store, without running any jobs. Prints its URL
 * on stdout and serves until SIGTERM/SIGINT. A non-loopback `--host` without a non-empty
 * ONCELY_DASHBOARD_TOKEN is refused by `startDashboard` (INVALID_ARGUMENT: exit 2).
 */
import type { Command } from 'commander';
import { port } from '../arg-parsers.js';
import { CliLog } from '../log.js';
import { printText } from '../output.js';
import { onShutdown } from '../signals.js';
import { openCliStore, type StoreFlags, withStoreOptions } from '../store-option.js';

interface DashboardFlags extends StoreFlags {
  host: string;
  port: number;
}

export function registerDashboard(program: Command): void {
  withStoreOptions(program.command('dashboard').description('serve the web dashboard and its JSON API'))
    .option('--host <host>', 'address to listen on (non-loopback needs ONCELY_DASHBOARD_TOKEN)', '127.0.0.1')
    .option('--port <port>', 'port (0 picks a free one)', port, 8080)
    .action((flags: DashboardFlags) => dashboard(flags));
}

async function dashboard(flags: DashboardFlags): Promise<void> {
  const log = new CliLog();
  const { store, shown } = await openCliStore(flags);
  const shutdown = onShutdown(() => process.exit(0));
  try {
    const token = process.env.ONCELY_DASHBOARD_TOKEN;
    // Loaded here, not at the top: the web server's modules are a third of the CLI's start-up
    // and no other command needs them.
    const { startDashboard } = await import('../../dashboard/server.js');
    const server = await startDashboard({
      store,
      host: flags.host,
      port: flags.port,
      logger: log,
      ...(token !== undefined && token !== '' && { token }),
    });
    printText(`oncely dashboard on ${server.url} (store ${shown}); Ctrl-C to stop`);
    const signal = await shutdown.requested;
    log.line(`received ${signal}: closing the dashboard`);
    await server.close();
  } finally {
    await store.close().catch(() => {});
    shutdown.dispose();
  }
}
