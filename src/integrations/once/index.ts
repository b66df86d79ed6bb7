export { once } from './once.js';
export { claimKey as onceClaimKey, MAX_ONCE_NAME_LENGTH, ONCE_KEY_PREFIX } from './options.js';
export type {
  OnceContext,
  OnceErrorInfo,
  OnceErrorPhase,
  OnceOptions,
  OnceOutcome,
  OnceSkipReason,
  OnceTick,
} from './types.js';
