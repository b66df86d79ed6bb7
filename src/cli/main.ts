#!/usr/bin/env node
/**
 * Entry point of the `oncely` command (package.json "bin"). Runs one command and exits with the
 * documented code: 0 ok, 1 runtime failure, 2 usage or configuration error (see exit.ts). Error
 * messages go to stderr, one `error: …` line per problem, with oncely's secrets redacted and
 * control characters neutralised.
 */
import { surviveClosedOutput } from './broken-pipe.js';
import { EXIT_OK, exitCodeOf, messageOf } from './exit.js';
import { buildProgram } from './program.js';
import { registerEnvSecrets } from './secrets.js';
import { printable } from './terminal-text.js';

async function main(argv: readonly string[]): Promise<number> {
  // Before anything can print: the secrets in oncely's own environment variables.
  registerEnvSecrets(process.env);
  // A reader that goes away (`| head -3`) must not stop a node: it goes on, writing nowhere.
  surviveClosedOutput();
  try {
    await buildProgram().parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT_OK;
  } catch (err) {
    const message = messageOf(err);
    if (message !== undefined) {
      for (const line of message.split('\n')) process.stderr.write(`error: ${printable(line)}\n`);
    }
    return exitCodeOf(err);
  }
}

const code = await main(process.argv);
// Exit explicitly (a driver's idle socket must not keep the process alive), after stdout and
// stderr have flushed.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
