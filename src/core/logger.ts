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
