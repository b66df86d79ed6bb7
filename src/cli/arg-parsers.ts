/**
 * Commander argument parsers for flag values. Each throws commander's `InvalidArgumentError`, so a
 * bad value is reported by commander as a usage error naming the flag (exit 2).
 */
import { InvalidArgumentError } from 'commander';
import { parseDuration } from '../core/duration.js';
import { OncelyError } from '../core/errors.js';

/** `--concurrency 4`, `--limit 20`: a whole number in [min, max]. */
export function wholeNumber(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = /^\s*\d+\s*$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}`);
    return n;
  };
}

/** `--grace 30s`: a Duration in milliseconds. */
export function duration(value: string): number {
  try {
    return parseDuration(/^\s*\d+\s*$/.test(value) ? Number(value) : value, 'duration');
  } catch (err) {
    throw new InvalidArgumentError(
      err instanceof OncelyError ? "use e.g. '500ms', '30s', '5m' or ISO-8601 'PT30S'" : String(err),
    );
  }
}

/**
 * A parser from a validator that throws `OncelyError` (`validateJobName`, …): a bad value is a
 * usage error naming the flag or argument (exit 2), found before the store is opened.
 */
export function checkedBy(validate: (value: string) => unknown): (value: string) => string {
  return (value) => {
    try {
      validate(value);
    } catch (err) {
      if (err instanceof OncelyError) throw new InvalidArgumentError(err.message);
      throw err;
    }
    return value;
  };
}

/** `--port 8080`. */
export const port = wholeNumber(0, 65_535);

export interface HostPort {
  host?: string;
  port: number;
}

/** `--dashboard 8080`, `--dashboard 0.0.0.0:8080`, `--dashboard [::1]:8080`. */
export function hostPort(value: string): HostPort {
  const m = /^(?:(\[[^\]]+\]|[^:[\]\s]+):)?(\d+)$/.exec(value.trim());
  const p = m ? Number(m[2]) : Number.NaN;
  if (!m || !Number.isSafeInteger(p) || p > 65_535)
    throw new InvalidArgumentError("use PORT or HOST:PORT, e.g. '8080' or '127.0.0.1:8080'");
  const host = m[1]?.replace(/^\[(.*)\]$/, '$1');
  return host === undefined ? { port: p } : { host, port: p };
}
