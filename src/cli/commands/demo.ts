/**
 * `oncely demo [--duration 30s]`: three local nodes on an embedded SQLite file, with a node killed
 * and restarted (src/cli/demo/). Exits 0 when the summary counts no duplicate run, 1 otherwise.
 */
import { type Command, Option } from 'commander';
import { duration } from '../arg-parsers.js';
import { runDemo } from '../demo/demo.js';
import { EXIT_FAILURE } from '../exit.js';

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('run 3 local nodes on SQLite, kill one, and count duplicate and missed runs')
    .addOption(
      new Option('--duration <duration>', 'how long the demo runs')
        .argParser(duration)
        .default(30_000, '30s'),
    )
    .action(async (flags: { duration: number }) => {
      const summary = await runDemo({ durationMs: flags.duration });
      if (summary.duplicates > 0) process.exitCode = EXIT_FAILURE;
    });
}
