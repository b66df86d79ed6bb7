/**
 * The `oncely` command tree (commander). Commander's own exits are turned into exceptions
 * (`exitOverride`) so that main.ts maps every outcome to the documented exit codes: help and
 * version 0, any usage error 2. `exitOverride` and the output settings are set before the
 * subcommands are added, which copy them.
 */
import { Command } from 'commander';
import { docPath } from '../core/docs.js';
import { packageVersion } from '../core/version.js';
import { registerAudit } from './commands/audit.js';
import { registerBackfill } from './commands/backfill.js';
import { registerCalendars } from './commands/calendars.js';
import { registerControl } from './commands/control.js';
import { registerDashboard } from './commands/dashboard.js';
import { registerDemo } from './commands/demo.js';
import { registerHistory } from './commands/history.js';
import { registerLocks } from './commands/locks.js';
import { registerNext } from './commands/next.js';
import { registerNodes } from './commands/nodes.js';
import { registerRun } from './commands/run.js';
import { registerSchedules } from './commands/schedules.js';
import { registerStatus } from './commands/status.js';
import { scrubSecrets } from './secrets.js';
import { printable } from './terminal-text.js';

export function buildProgram(): Command {
  const program = new Command('oncely');
  program
    .description('Run scheduled shell commands once per fire time across every node sharing a store.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => process.stdout.write(text),
      writeErr: (text) => process.stderr.write(printable(scrubSecrets(text))),
    })
    .addHelpText(
      'after',
      '\nStore: --store URL, else $ONCELY_STORE, else sqlite:./oncely.db\n' +
        'Exit codes: 0 ok, 1 runtime failure (e.g. store unreachable), 2 usage or config error.\n' +
        `Docs: ${docPath('cli.md')} (all guides: ${docPath('README.md')})`,
    );
  registerRun(program);
  registerStatus(program);
  registerHistory(program);
  registerNext(program);
  registerAudit(program);
  registerLocks(program);
  registerNodes(program);
  registerSchedules(program);
  registerCalendars(program);
  registerControl(program);
  registerBackfill(program);
  registerDashboard(program);
  registerDemo(program);
  return program;
}
