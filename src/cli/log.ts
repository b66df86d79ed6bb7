/**
 * The log of a long-running command (`oncely run`, `oncely dashboard`): one line per event on
 * **stderr**, `<ISO time> <message>`, so stdout stays free for data. Every line passes through
 * `scrubSecrets` (a driver error echoing the store URL, or a command printing the dashboard token,
 * cannot leak it) and then `printable` (a command's output cannot send terminal escapes, nor fake
 * a log line with `\r`). It doubles as the `Logger` handed to the scheduler and the dashboard
 * (debug lines are dropped unless `ONCELY_DEBUG` is set).
 */

import { OncelyError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { isClosed } from './broken-pipe.js';
import { scrubSecrets } from './secrets.js';
import { printable } from './terminal-text.js';

export type LineWriter = (line: string) => void;

const toStderr: LineWriter = (line) => {
  if (!isClosed(process.stderr)) process.stderr.write(line);
};

function describe(value: unknown): string {
  if (value instanceof OncelyError) return `${value.code}: ${value.message}`;
  if (value instanceof Error) return value.message || value.name;
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

export class CliLog implements Logger {
  constructor(private readonly write: LineWriter = toStderr) {}

  /** Writes one line (newlines inside `message` become separate lines, each with the timestamp). */
  line(message: string): void {
    const at = new Date().toISOString();
    const text = printable(scrubSecrets(message))
      .split('\n')
      .map((l) => `${at} ${l}\n`)
      .join('');
    this.write(text);
  }

  /**
   * The logger for the scheduler of `oncely run`, whose runs run-log.ts already reports one line
   * each: the scheduler's records about jobs' runs and misfires (fields with a `job`) and its info records go to
   * debug; its other warnings and errors keep their level, with the error (if any) as detail
   * rather than the fields.
   */
  forScheduler(): Logger {
    const isFields = (v: unknown): v is Record<string, unknown> =>
      typeof v === 'object' && v !== null && !(v instanceof Error);
    const detail = (args: unknown[]) => (isFields(args[1]) ? [args[0], ...args.slice(2)] : args);
    return {
      debug: (...args) => this.debug(...args),
      info: (...args) => this.debug(...args),
      warn: (...args) =>
        isFields(args[1]) && 'job' in args[1] ? this.debug(...args) : this.warn(...detail(args)),
      error: (...args) => this.error(...detail(args)),
    };
  }

  debug(...args: unknown[]): void {
    if (process.env.ONCELY_DEBUG) this.line(`debug ${args.map(describe).join(' ')}`);
  }
  info(...args: unknown[]): void {
    this.line(args.map(describe).join(' '));
  }
  warn(...args: unknown[]): void {
    this.line(`warning ${args.map(describe).join(' ')}`);
  }
  error(...args: unknown[]): void {
    this.line(`error ${args.map(describe).join(' ')}`);
  }
}
