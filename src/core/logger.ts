/**
 * The logging surface oncely needs. pino, bunyan and `console` all satisfy it as they are:
 * `createScheduler({ logger: pino() })` or `{ logger: console }`.
 */
export interface Logger {
  debug(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}

/** Drops everything; the default, so a library never writes to stdout unasked. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

/**
 * Warnings and errors to `console.warn`/`console.error` (stderr), debug and info dropped: for the
 * few places where dropping everything would hide a failure nobody else reports (a `once()` tick
 * runs inside a cron library's timer, where an error has no caller to go to).
 */
export const consoleWarnings: Logger = {
  debug() {},
  info() {},
  warn: (...args: unknown[]) => console.warn(...args),
  error: (...args: unknown[]) => console.error(...args),
};

/** The fields of one structured log record (`job`, `fireTime`, `status`, `durationMs`…). */
export type LogFields = Record<string, unknown>;

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Writes one record: `level`, a one-line message, its fields, and the error it is about (if any). */
export type LogRecord = (level: LogLevel, message: string, fields: LogFields, error?: unknown) => void;

/**
 * pino (and anything with pino's `child()` and `bindings()`) takes `(fields, message)` and writes
 * the fields as JSON keys; the error goes in as `err`, pino's error key, so its serializer keeps
 * type, message and stack. Every other logger (`console`, winston, bunyan) gets
 * `(message, fields)`, plus the error itself as a third argument: `console` prints all of them,
 * winston merges the fields into its record's meta.
 */
export function isPinoLike(logger: Logger): boolean {
  const l = logger as unknown as Record<string, unknown>;
  return typeof l.child === 'function' && typeof l.bindings === 'function';
}

/** The record writer for `logger` (see isPinoLike for the calling convention). Never throws. */
export function recordWriter(logger: Logger): LogRecord {
  if (logger === silentLogger) return () => {};
  const pino = isPinoLike(logger);
  return (level, message, fields, error) => {
    try {
      if (pino) logger[level](error === undefined ? fields : { ...fields, err: error }, message);
      else if (error === undefined) logger[level](message, fields);
      else logger[level](message, fields, error);
    } catch {
      // A logger that throws must not break the scheduler's loop.
    }
  };
}
