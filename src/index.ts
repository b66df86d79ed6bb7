/**
 * oncely: scheduled work that runs once per fire time across every instance of a service.
 * This entry point holds the backend-neutral API (locks, the scheduler, `once()` for existing cron
 * code); backends live at `oncely/sqlite`, `oncely/postgres`, `oncely/mysql`, `oncely/redis`,
 * `oncely/etcd` (and are loaded by `openStore` on demand).
 *
 * @module oncely
 */
export { type Clock, StoreClock, systemClock } from './core/clock.js';
export { type Duration, parseDuration } from './core/duration.js';
export { OncelyError, type OncelyErrorCode } from './core/errors.js';
export { type Logger, silentLogger } from './core/logger.js';
export { redactUrl } from './core/redact.js';
export * from './integrations/once/index.js';
export { tryLock } from './lock/try-lock.js';
export type { Lock, TryLockOptions } from './lock/types.js';
export { LOCK_KEY_PREFIX, MAX_LOCK_NAME_LENGTH } from './lock/validate.js';
export { type WithLockOptions, type WithLockResult, withLock } from './lock/with-lock.js';
export type { Exclusion } from './schedule/exclude.js';
export { type FireTimesOptions, fireTimes } from './schedule/fire-times.js';
export type { Jitter } from './schedule/jitter.js';
export type { Trigger } from './schedule/trigger.js';
export * from './scheduler/index.js';
export type { RateLimit } from './scheduler/run/fleet-limit-spec.js';
export * from './store/index.js';
