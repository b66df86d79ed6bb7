import type { StoreCapabilities } from './types.js';

/** Defaults a backend inherits; a new capability gets a safe default here so no backend breaks. */
export const DEFAULT_CAPABILITIES: StoreCapabilities = {
  fencing: true,
  durability: 'server',
  serverTime: true,
  multiProcess: true,
  multiHost: true,
  batchAcquire: true,
  // False by default: a store that keeps BaseStore's op-by-op doApply neither makes one round trip
  // nor applies the batch atomically. Every shipped backend overrides doApply and sets it true.
  batchApply: false,
  // False by default, for the same reason: BaseStore's doGetMany and doCount are correct but take
  // a round trip per key and per scan page. Every shipped backend overrides both and sets them true.
  batchGet: false,
  serverCount: false,
  // False by default: a page claim cannot be built from the single calls without a race.
  pages: false,
};
