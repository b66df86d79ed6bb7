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
