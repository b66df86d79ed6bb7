import { OncelyError } from './errors.js';

/**
 * The logging surface oncely needs. pino, bunyan and `console` all satisfy it as they are:
 * `createScheduler({ logger: pino() })` or `{ logger: console }`.
 */
export interface Logger {
  /** Routine detail, e.g. a run started, a fire time taken by another node. */
  debug(...args: unknown[]): void;
  /** Normal outcomes, e.g. a run succeeded or was skipped. */
  info(...args: unknown[]): void;
  /** Trouble oncely works around, e.g. a lease lost, missed fire times, a store call that failed. */
  warn(...args: unknown[]): void;
  /** Failures, e.g. a handler that threw or timed out. */
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

/**
 * A record as one line of text: the message, then its fields as `key=value` (strings quoted only
 * when they need it, objects as JSON, `…Ms` durations in whole milliseconds). For loggers that print their arguments as they are
 * (`console`, Nest's `Logger`), where a fields object would be dumped over many lines.
 *
 * @example
 * recordLine('oncely: report failed', { job: 'report', attempt: 1 }); // 'oncely: report failed · job=report attempt=1'
 */
export function recordLine(message: string, fields: LogFields): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    parts.push(`${key}=${fieldText(key, value)}`);
  }
  return parts.length === 0 ? message : `${message} · ${parts.join(' ')}`;
}

function fieldText(key: string, value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=·]+$/u.test(value) ? value : JSON.stringify(value);
  // Durations (`durationMs`, `lateMs`) in whole milliseconds, not 0.6259840000002441.
  if (typeof value === 'number') return String(key.endsWith('Ms') ? Math.round(value) : value);
  if (value instanceof Date) return value.toISOString();
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** The record writer for `logger` (see isPinoLike for the calling convention). Never throws. */
export function recordWriter(logger: Logger): LogRecord {
  if (logger === silentLogger) return () => {};
  if (logger === consoleWarnings) {
    // One line per record on stderr. A thrown error of the user's code (a handler's) goes along
    // for its stack, its text then left out of the line; oncely's own errors (a store outage,
    // repeated at every back-off) say what they need in their text, without a stack each time.
    return (level, message, fields, error) => {
      if (level !== 'warn' && level !== 'error') return;
      try {
        const withStack = error !== undefined && !(error instanceof OncelyError);
        const { error: _text, ...rest } = fields;
        const line = recordLine(message, withStack ? rest : fields);
        if (withStack) logger[level](line, error);
        else logger[level](line);
      } catch {
        // A broken stderr must not break the scheduler's loop.
      }
    };
  }
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
