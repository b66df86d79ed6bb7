/**
 * What inspection commands print on stdout: pretty JSON for `--json` (dates as ISO-8601 strings),
 * or text. Warnings go to stderr, so `--json` output stays parseable. Everything is scrubbed of
 * oncely's secrets and of terminal control characters (see terminal-text.ts).
 */
import { scrubSecrets } from './secrets.js';
import { printable, printableJson } from './terminal-text.js';

export function printJson(value: unknown): void {
  process.stdout.write(`${printableJson(scrubSecrets(JSON.stringify(value, null, 2)))}\n`);
}

export function printText(text: string): void {
  process.stdout.write(`${printable(scrubSecrets(text))}\n`);
}

export function warn(text: string): void {
  process.stderr.write(`warning: ${printable(scrubSecrets(text))}\n`);
}
