import { Logger as NestLogger } from '@nestjs/common';
import { type LogFields, type Logger, type LogLevel, recordLine } from '../../core/logger.js';

/** A Nest `LoggerService` (`new Logger('oncely')`): `log` where oncely's `Logger` has `info`. */
export interface NestLoggerLike {
  /** Info-level records (a succeeded run goes to `debug` instead). */
  log(message: unknown, ...rest: unknown[]): unknown;
  /** Warnings, e.g. a failed run, a lost lease. */
  warn(message: unknown, ...rest: unknown[]): unknown;
  /** Errors, with the stack as a second argument where there is one. */
  error(message: unknown, ...rest: unknown[]): unknown;
  /** Debug-level records, one line per finished run; dropped when the logger has no `debug`. */
  debug?(message: unknown, ...rest: unknown[]): unknown;
}

/**
 * oncely's `Logger` over a Nest logger, one line per record. Nest prints every argument it gets
 * (a fields object as `Object(9) {…}` over a dozen lines), so each record is written as one
 * string: the message and its fields as `key=value`, durations in whole milliseconds. A run is one
 * line at `debug` (its start is not written: its end says it all); a failed run is a warning with
 * the error's text; errors at `error`, with the stack where there is one.
 *
 * `quiet` drops debug and info: the default when no logger is given (warnings and errors still
 * reach Nest's logger, which the application's `logger` option configures or silences).
 */
export function nestLogger(nest: NestLoggerLike, { quiet = false } = {}): Logger {
  const write = (level: LogLevel, args: unknown[]): void => {
    if (quiet && (level === 'debug' || level === 'info')) return;
    const [message, ...rest] = args;
    let fields: LogFields | undefined;
    let error: unknown;
    for (const arg of rest) {
      if (isFields(arg)) fields = arg;
      else error = arg;
    }
    if (fields?.status === 'running') return;
    const at: LogLevel = level === 'info' && fields?.status === 'succeeded' ? 'debug' : level;
    let line = fields ? recordLine(String(message), fields) : String(message);
    if (error !== undefined && fields?.error === undefined) line += `: ${errorText(error)}`;
    if (at === 'debug') nest.debug?.(line);
    else if (at === 'info') nest.log(line);
    else if (at === 'warn') nest.warn(line);
    else if (error instanceof Error && error.stack) nest.error(line, error.stack);
    else nest.error(line);
  };
  return {
    debug: (...args) => write('debug', args),
    info: (...args) => write('info', args),
    warn: (...args) => write('warn', args),
    error: (...args) => write('error', args),
  };
}

/** The default: Nest's own `Logger` with the context `oncely`, warnings and errors only. */
export function defaultNestLogger(): Logger {
  return nestLogger(new NestLogger('oncely'), { quiet: true });
}

function isFields(value: unknown): value is LogFields {
  if (value === null || typeof value !== 'object' || value instanceof Error) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
