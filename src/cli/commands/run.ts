/**
 * `oncely run FILE`: a distributed crontab. Every node started on the same store with the same
 * jobs file shares the work; each occurrence runs its shell command on exactly one node.
 *
 * Order matters: the file is validated completely before the store is opened (a bad file exits 2
 * with nothing started), the dashboard is started before the scheduler (a refused dashboard
 * config exits 2 before any job is claimed), and signal handlers are installed before `start()`.
 *
 * Shutdown (first SIGTERM/SIGINT): stop claiming, give running commands up to `--grace` to finish,
 * then abort the rest (their process groups get SIGTERM, then SIGKILL), wait for them, exit 0.
 * A second signal SIGKILLs every running command and exits 1 at once.
 *
 * Secrets: commands get no `ONCELY_*` setting of this process (job-env.ts), and their output is
 * redacted of the store password and dashboard token before it is logged or stored (secrets.ts).
 */
import { type Command, Option } from 'commander';
import type { Dashboard } from '../../dashboard/server.js';
import { validateNodeName } from '../../scheduler/options.js';
import { createScheduler } from '../../scheduler/scheduler.js';
import { checkedBy, duration, type HostPort, hostPort, wholeNumber } from '../arg-parsers.js';
import { commandHandler, RunningCommands } from '../command-runner.js';
import { EXIT_FAILURE } from '../exit.js';
import { loadJobsFile } from '../jobs-file.js';
import { CliLog } from '../log.js';
import { attachRunLog } from '../run-log.js';
import { refuseShortStoreSecret, secretsRedactor } from '../secrets.js';
import { onShutdown } from '../signals.js';
import { openCliStore, type StoreFlags, storeUrlOf, withStoreOptions } from '../store-option.js';
import { formatDuration } from '../table.js';

interface RunFlags extends StoreFlags {
  node?: string;
  concurrency?: number;
  dashboard?: HostPort;
  grace: number;
}

export function registerRun(program: Command): void {
  withStoreOptions(
    program
      .command('run')
      .description('run the jobs of a YAML/JSON jobs file, each occurrence once across every node')
      .argument('<file>', 'jobs file (YAML, or JSON when it ends in .json) with a top-level "jobs:" list'),
  )
    .option(
      '--node <name>',
      "this node's name in history, logs and ONCELY_NODE (default: host:pid:random)",
      checkedBy(validateNodeName),
    )
    .option('--concurrency <n>', 'commands run at once on this node (default: 16)', wholeNumber(1, 10_000))
    .option(
      '--dashboard <[host:]port>',
      'also serve the dashboard (non-loopback hosts need ONCELY_DASHBOARD_TOKEN)',
      hostPort,
    )
    .addOption(
      new Option('--grace <duration>', 'on SIGTERM/SIGINT, how long running commands may finish')
        .argParser(duration)
        .default(30_000, '30s'),
    )
    .action((file: string, flags: RunFlags) => run(file, flags));
}

async function run(file: string, flags: RunFlags): Promise<void> {
  const jobsFile = loadJobsFile(file);
  refuseShortStoreSecret(storeUrlOf(flags));
  const log = new CliLog();
  const { store, shown } = await openCliStore(flags);
  let dashboard: Dashboard | undefined;
  const running = new RunningCommands();
  const shutdown = onShutdown((signal) => {
    log.line(`received ${signal} again: killing ${running.size} running command(s) and exiting now`);
    running.killAll('SIGKILL');
    process.exit(EXIT_FAILURE);
  });
  try {
    const scheduler = createScheduler({
      store,
      logger: log.forScheduler(),
      stopTimeout: flags.grace,
      ...(flags.node !== undefined && { node: flags.node }),
      ...(flags.concurrency !== undefined && { concurrency: flags.concurrency }),
    });
    const node = scheduler.node;
    // Every secret is registered by now (the environment's in main.ts, the store URL's on opening).
    const redactor = secretsRedactor();
    for (const job of jobsFile.jobs) {
      scheduler.define(job.name, job.options, commandHandler(job, { node, log, running, redactor }));
    }
    const runLog = attachRunLog(scheduler, log);
    if (flags.dashboard) {
      const token = process.env.ONCELY_DASHBOARD_TOKEN;
      // Loaded only when asked for (see commands/dashboard.ts).
      const { startDashboard } = await import('../../dashboard/server.js');
      dashboard = await startDashboard({
        store,
        scheduler,
        port: flags.dashboard.port,
        logger: log,
        ...(flags.dashboard.host !== undefined && { host: flags.dashboard.host }),
        ...(token !== undefined && token !== '' && { token }),
      });
    }
    await scheduler.start();
    const names = jobsFile.jobs.map((j) => j.name);
    log.line(
      `ready    node=${node} store=${shown} jobs=${names.join(',')} (${names.length})` +
        (dashboard ? ` dashboard=${dashboard.url}` : ''),
    );

    const signal = await shutdown.requested;
    log.line(
      `stopping node=${node} (${signal}): no new claims; running commands get up to ${formatDuration(flags.grace)} (send ${signal} again to exit at once)`,
    );
    await scheduler.stop();
    for (const label of runLog.abandonedRuns()) {
      log.line(
        `finished ${label} node=${node} status=abandoned (not finished when the node stopped; another node may recover it)`,
      );
    }
    await running.idle();
    log.line(`stopped  node=${node}`);
  } finally {
    await dashboard?.close().catch((err) => log.error('closing the dashboard failed:', err));
    await store.close().catch(() => {});
    shutdown.dispose();
  }
}
