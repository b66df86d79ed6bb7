import { type Duration, parseDuration, parsePositiveDuration } from '../../core/duration.js';
import { invalidArgument } from '../../core/errors.js';
import { validateJobName } from '../../scheduler/job-options.js';
import { validateLeaseMs } from '../../store/validate.js';
import { type Method, methodOf } from './method.js';
import { type OnceSpec, runOnceBound } from './once-run.js';
import { ONCE_METADATA } from './tokens.js';

/** What `@Once(options)` accepts. Durations are milliseconds or strings (`'30s'`, `'5m'`). */
export interface OnceOptions {
  /**
   * Lock name (default `ClassName.method`; set it if your build minifies class names). The job's
   * lock is `lock:<name>`, the one `withLock`/`tryLock` and `oncely locks` use.
   */
  name?: string;
  /**
   * How long a run holds the job's lock if its process dies (kept alive while the method runs),
   * and how long after its claim a fire time stays claimed, so that an instance whose tick for it
   * comes up to this late (a busy event loop, a clock behind) is refused.
   */
  lockAtMostFor: Duration;
  /** Keep the job's lock at least this long after it was taken (ShedLock's lockAtLeastFor). */
  lockAtLeastFor?: Duration;
}

/** What `@Once` records on the method's wrapper; read by discovery at bootstrap. */
export interface OnceMetadata {
  /** `name` as given; `undefined` = {@link where}. */
  name: string | undefined;
  /** `Class.method` of the class that declares the method, for the default name and messages. */
  where: string;
  atMostMs: number;
  atLeastMs: number;
  /** The undecorated method. */
  original: Method;
}

const KNOWN = new Set(['name', 'lockAtMostFor', 'lockAtLeastFor']);

/**
 * ShedLock's `@SchedulerLock` for NestJS: a method that also has `@Cron()`, `@Interval()` or
 * `@Timeout()` from @nestjs/schedule runs on one instance per **fire time**, not merely once per
 * lock window, so an instance whose timer fires late does not run the same fire time again.
 * Needs `OncelyModule.forRoot(…)`. Decorator order does not matter.
 *
 * @example
 * @Cron('0 9 * * *', { timeZone: 'Europe/Berlin' })
 * @Once({ lockAtMostFor: '10m' })
 * async sendReport() { … }
 */
export function Once(options: OnceOptions): MethodDecorator {
  const checked = checkOnceOptions(options);
  return (target, key, descriptor) => {
    const original = methodOf('@Once', target, key, descriptor);
    const where = `${(target as { constructor: { name: string } }).constructor.name}.${String(key)}`;
    if (Reflect.hasOwnMetadata(ONCE_METADATA, original))
      throw invalidArgument(`@Once on ${where}: applied twice; keep one`);
    const metadata: OnceMetadata = { ...checked, where, original };
    // The wrapper replaces the method now, whatever the decorator order: @nestjs/schedule reads
    // `instance[method]` in its own onModuleInit, which may run before or after OncelyModule's
    // (both modules are global, so Nest orders their hooks by import order only). Metadata that
    // decorators below this one put on the original is copied over; decorators above put theirs on
    // the wrapper; the schedule is read from the wrapper at bootstrap, when all of them have run.
    const wrapper: Method = function (this: unknown, ...args: unknown[]) {
      return runOnceBound(this, wrapper, original, args, where);
    };
    Object.defineProperty(wrapper, 'name', { value: original.name });
    for (const k of Reflect.getOwnMetadataKeys(original))
      Reflect.defineMetadata(k, Reflect.getOwnMetadata(k, original), wrapper);
    Reflect.defineMetadata(ONCE_METADATA, metadata, wrapper);
    (descriptor as PropertyDescriptor).value = wrapper;
    return descriptor;
  };
}

/** Validates `@Once`'s options when the decorator is created (at class definition). */
function checkOnceOptions(options: OnceOptions): Omit<OnceMetadata, 'original' | 'where'> {
  if (options === null || typeof options !== 'object')
    throw invalidArgument(
      "@Once needs options { lockAtMostFor, lockAtLeastFor?, name? }, e.g. @Once({ lockAtMostFor: '5m' })",
    );
  for (const field of Object.keys(options)) {
    if (!KNOWN.has(field))
      throw invalidArgument(
        `@Once: unknown option ${JSON.stringify(field)}; known: ${[...KNOWN].join(', ')}`,
      );
  }
  const name = options.name === undefined ? undefined : validateJobName(options.name);
  const what = `@Once${name === undefined ? '' : ` "${name}"`}`;
  if (options.lockAtMostFor === undefined) {
    throw invalidArgument(
      `${what}: lockAtMostFor is required: how long a run may hold the lock if its process dies, and how late another instance's tick for the same fire time may come and still be refused (e.g. '5m')`,
    );
  }
  const atMostMs = validateLeaseMs(
    parsePositiveDuration(options.lockAtMostFor, `${what}: lockAtMostFor`),
    `${what}: lockAtMostFor`,
  );
  const atLeastMs =
    options.lockAtLeastFor === undefined
      ? 0
      : parseDuration(options.lockAtLeastFor, `${what}: lockAtLeastFor`);
  if (atLeastMs > atMostMs) {
    throw invalidArgument(
      `${what}: lockAtLeastFor (${atLeastMs} ms) must not exceed lockAtMostFor (${atMostMs} ms)`,
    );
  }
  return { name, atMostMs, atLeastMs };
}

/** The `@Once` declaration of the method `fn` (as found on an instance), or `undefined`. */
export function onceMetadataOf(fn: object): OnceMetadata | undefined {
  return Reflect.getMetadata(ONCE_METADATA, fn) as OnceMetadata | undefined;
}

/** The spec a bound method runs with (validates the default name `Class.method`). */
export function onceSpec(metadata: OnceMetadata): OnceSpec {
  const name = metadata.name ?? validateJobName(metadata.where);
  return { name, where: metadata.where, atMostMs: metadata.atMostMs, atLeastMs: metadata.atLeastMs };
}
