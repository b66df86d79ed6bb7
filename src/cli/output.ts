/**
 * What inspection commands print on stdout: pretty JSON for `--json` (dates as ISO-8601 strings),
 * or text. Warnings go to stderr, so `--json` output stays parseable. Everything is scrubbed of
 * store secrets.
 */
import { scrubSecrets } from './secrets.js';

export function printJson(value: unknown): void {
  process.stdout.write(`${scrubSecrets(JSON.stringify(value, null, 2))}\n`);
}

export function printText(text: string): void {
  process.stdout.write(`${scrubSecrets(text)}\n`);
}

export function warn(text: string): void {
  process.stderr.write(`warning: ${scrubSecrets(text)}\n`);
}
