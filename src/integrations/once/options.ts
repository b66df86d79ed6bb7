import { parsePositiveDuration } from '../../core/duration.js';
import { invalidArgument } from '../../core/errors.js';
import { defaultOwner } from '../../core/ids.js';
import { consoleWarnings, type Logger } from '../../core/logger.js';
import { checkOptionNames } from '../../core/options.js';
import { type CompiledTrigger, compileTrigger, type Trigger } from '../../schedule/trigger.js';
import { MAX_LEASE_MS, requireWellFormed, validateOwner } from '../../store/validate.js';
import type { OnceErrorInfo, OnceOptions } from './types.js';

/** Longest `once()` name, in characters (UTF-16 code units). */
export const MAX_ONCE_NAME_LENGTH = 255;
/** Claims live in the store's lease space as `once:<name>@<fire time, ISO-8601 UTC>` (`oncely locks` lists them). */
export const ONCE_KEY_PREFIX = 'once:';
/** The default of `lockAtMostFor`, as for scheduler jobs. */
const DEFAULT_LOCK_AT_MOST_MS = 30_000;
/** The least default `tolerance` (see {@link OnceSpec.toleranceMs}). */
const DEFAULT_TOLERANCE_MS = 30_000;
/** The largest fire time whose ISO-8601 form has the fixed 24 characters the key relies on (9999-12-31). */
const MAX_KEYED_TIME = 253_402_300_799_999;

const KNOWN = [
  'name',
  'cron',
  'timezone',
  'every',
  'lockAtMostFor',
  'tolerance',
  'owner',
  'onError',
  'logger',
] as const;

/** `once()` options, validated once, when the tick function is made. */
export interface OnceSpec {
  name: string;
  /** The schedule ticks are snapped to; `undefined` = the tick must carry it (croner, node-cron 4). */
  trigger: CompiledTrigger | undefined;
  owner: string;
  /** `lockAtMostFor`. */
  atMostMs: number;
  /**
   * How late (store clock) a claim may be granted and still run. Also how long after its fire time
   * a claim stays taken: both bounds are the same number, which is what makes a late tick safe (a
   * claim granted later than this is refused; one granted earlier finds the fire time still taken).
   */
  toleranceMs: number;
  /**
   * Lease length of a claim and of each renewal: `lockAtMostFor + tolerance`, so that a claim
   * granted at or after its fire time minus `lockAtMostFor` lasts until `fireTime + tolerance` even
   * if this instance dies holding it (at most once per fire time, never re-run after a crash).
   */
  leaseMs: number;
  logger: Logger;
  report: (error: unknown, info: OnceErrorInfo) => void;
}

/**
 * The claim key of a fire time. The ISO-8601 part has a fixed length (24 characters) for every
 * keyable time, so two different `(name, fireTime)` pairs never give the same key.
 */
export function claimKey(name: string, fireTime: number): string {
  return `${ONCE_KEY_PREFIX}${name}@${new Date(fireTime).toISOString()}`;
}

/** Whether `fireTime` can be keyed by {@link claimKey} (whole ms from 1970 to 9999). */
export function keyableTime(fireTime: number): boolean {
  return Number.isInteger(fireTime) && fireTime >= 0 && fireTime <= MAX_KEYED_TIME;
}

function validateName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0)
    throw invalidArgument('once(): name must be a non-empty string (the same on every instance)');
  if (name.length > MAX_ONCE_NAME_LENGTH) {
    throw invalidArgument(
      `once(): name is ${name.length} characters long; at most ${MAX_ONCE_NAME_LENGTH} are allowed`,
    );
  }
  if (name.includes('\u0000')) throw invalidArgument('once(): name must not contain NUL characters');
  requireWellFormed(name, 'once(): name');
  return name;
}

/**
 * Validates `once()` options; every error names the field. `lockAtLeastFor` (ShedLock's guard for
 * short tasks) gets its own hint: here a fire time stays taken until `fireTime + tolerance`.
 */
export function onceSpec(options: OnceOptions): OnceSpec {
  if (options !== null && typeof options === 'object' && 'lockAtLeastFor' in options) {
    throw invalidArgument(
      'once(): lockAtLeastFor is not an option here: each fire time stays taken until fireTime + tolerance (default 30 s), however quickly it ran; set tolerance instead',
    );
  }
  checkOptionNames('once()', options, KNOWN);
  const name = validateName(options.name);
  const what = (field: string) => `once(${JSON.stringify(name)}): ${field}`;
  if (options.timezone !== undefined && options.cron === undefined)
    throw invalidArgument(`${what('timezone')} applies to cron only; give cron too, or drop timezone`);
  let trigger: CompiledTrigger | undefined;
  if (options.cron !== undefined || options.every !== undefined) {
    const t = { cron: options.cron, every: options.every, timezone: options.timezone } as Trigger;
    trigger = compileTrigger(t, `once(${JSON.stringify(name)})`);
  }
  const atMostMs =
    options.lockAtMostFor === undefined
      ? DEFAULT_LOCK_AT_MOST_MS
      : parsePositiveDuration(options.lockAtMostFor, what('lockAtMostFor'));
  const toleranceMs =
    options.tolerance === undefined
      ? Math.max(DEFAULT_TOLERANCE_MS, trigger?.kind === 'every' ? trigger.everyMs : 0)
      : parsePositiveDuration(options.tolerance, what('tolerance'));
  if (atMostMs + toleranceMs > MAX_LEASE_MS) {
    throw invalidArgument(
      `${what('lockAtMostFor + tolerance')} is ${atMostMs + toleranceMs} ms; at most ${MAX_LEASE_MS} ms (100 years) are allowed`,
    );
  }
  const owner = options.owner === undefined ? defaultOwner() : validateOwner(options.owner);
  if (options.onError !== undefined && typeof options.onError !== 'function')
    throw invalidArgument(
      `${what('onError')} must be a function (error, { name, fireTime, during }) => void`,
    );
  const logger = options.logger ?? consoleWarnings;
  if (typeof logger !== 'object' || logger === null || typeof logger.error !== 'function')
    throw invalidArgument(
      `${what('logger')} must have debug, info, warn and error methods (console or pino do)`,
    );
  const onError = options.onError;
  const report = (error: unknown, info: OnceErrorInfo): void => {
    try {
      if (onError) onError(error, info);
      else logger.error(`once ${JSON.stringify(name)}: ${info.during} failed`, error);
    } catch (hookError) {
      // A throwing onError must not reach the cron library's timer either.
      logger.error(`once ${JSON.stringify(name)}: onError threw`, hookError);
    }
  };
  return { name, trigger, owner, atMostMs, toleranceMs, leaseMs: atMostMs + toleranceMs, logger, report };
}
