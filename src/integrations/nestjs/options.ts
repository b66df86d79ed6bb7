import { parseDuration } from '../../core/duration.js';
import { invalidArgument } from '../../core/errors.js';
import { type Logger, silentLogger } from '../../core/logger.js';
import { describe } from '../../core/options.js';
import { createScheduler, type Scheduler } from '../../scheduler/scheduler.js';
import type { SchedulerOptions } from '../../scheduler/types.js';
import { type OpenStoreOptions, openStore } from '../../store/open.js';
import type { Store } from '../../store/types.js';
import { defaultNestLogger, type NestLoggerLike, nestLogger } from './nest-logger.js';
import { OnceRuntime } from './once-run.js';

export type { NestLoggerLike } from './nest-logger.js';

/**
 * `OncelyModule.forRoot(options)`: the store (exactly one of `store` or `storeUrl`) and the
 * scheduler's options.
 */
export interface OncelyModuleOptions extends Omit<SchedulerOptions, 'store' | 'logger'> {
  /** A store you opened (`openStore`, `new PostgresStore({ pool })`, …); you close it. */
  store?: Store;
  /** A store URL the module opens (`sqlite:./oncely.db`, `postgres://…`, …) and closes on shutdown. */
  storeUrl?: string;
  /** `openStore` options for `storeUrl` (`prefix`, …). */
  storeOptions?: OpenStoreOptions;
  /**
   * oncely's `Logger` (pino, `console`), a Nest logger (`new Logger('oncely')`: one line per run at
   * `debug`, warnings and errors at their levels), or `false` for none. Default: Nest's `Logger`
   * (context `oncely`), warnings and errors only.
   */
  logger?: Logger | NestLoggerLike | false;
}

/** What the module's providers share: built once per application from its options. */
export interface OncelyConnection {
  store: Store;
  scheduler: Scheduler;
  once: OnceRuntime;
  /** The module opened the store (from `storeUrl`) and closes it on shutdown. */
  ownsStore: boolean;
  /** How long shutdown waits for `@Once` runs in flight (the scheduler's `stopTimeout`). */
  stopTimeoutMs: number;
  logger: Logger;
}

/** `INVALID_ARGUMENT` unless `options` names exactly one store, and store options only with a URL. */
export function checkModuleOptions(options: OncelyModuleOptions): void {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw invalidArgument(
      `OncelyModule options must be an object { store | storeUrl, storeOptions?, node?, concurrency?, … }; got ${describe(options)}`,
    );
  }
  const hasStore = options.store !== undefined;
  const hasUrl = options.storeUrl !== undefined;
  if (hasStore === hasUrl) {
    throw invalidArgument(
      hasStore
        ? 'OncelyModule: give either store or storeUrl, not both'
        : "OncelyModule needs a store: { storeUrl: 'sqlite:./oncely.db' } or { store } (an opened oncely Store)",
    );
  }
  if (hasStore && options.storeOptions !== undefined)
    throw invalidArgument(
      'OncelyModule: storeOptions apply to storeUrl only; configure your own store directly',
    );
  if (hasStore && typeof (options.store as Partial<Store>).acquire !== 'function')
    throw invalidArgument('OncelyModule: store must be an oncely Store (openStore(url) or a backend class)');
}

/** oncely's `Logger` from either kind the options accept. */
function adaptLogger(logger: Logger | NestLoggerLike | false | undefined): Logger {
  if (logger === false) return silentLogger;
  if (logger === undefined) return defaultNestLogger();
  if (typeof (logger as Partial<Logger>).info === 'function') return logger as Logger;
  return nestLogger(logger as NestLoggerLike);
}

/**
 * Opens the store (for `storeUrl`) and creates the scheduler. Everything is validated before the
 * store is opened where possible; a store the module opened is closed again when a later step
 * fails, so a bad option never leaves a connection holding the process open.
 */
export async function connect(options: OncelyModuleOptions): Promise<OncelyConnection> {
  checkModuleOptions(options);
  const { store: given, storeUrl, storeOptions, logger: anyLogger, ...rest } = options;
  const logger = adaptLogger(anyLogger);
  const stopTimeoutMs = parseDuration(rest.stopTimeout ?? '30s', 'OncelyModule: stopTimeout');
  const store = given ?? (await openStore(storeUrl as string, storeOptions));
  try {
    const scheduler = createScheduler({ ...rest, store, logger });
    const once = new OnceRuntime(store, scheduler.node, logger, rest.clock);
    return { store, scheduler, once, ownsStore: given === undefined, stopTimeoutMs, logger };
  } catch (err) {
    if (given === undefined) await store.close().catch(() => {});
    throw err;
  }
}
