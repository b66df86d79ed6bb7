export { BaseStore, DEFAULT_CAPABILITIES } from './base.js';
export { MemoryStore } from './memory.js';
export { type BackendOptions, type FromUrl, type OpenStoreOptions, openStore } from './open.js';
export type {
  Lease,
  LeaseRequest,
  ListLeasesOptions,
  PageClaim,
  PageOp,
  PutOptions,
  ScanOptions,
  Store,
  StoreCapabilities,
  StoredRecord,
  SweepOptions,
  SweepResult,
  WriteOp,
} from './types.js';
export {
  MAX_BATCH,
  MAX_KEY_LENGTH,
  type NormalizedWriteOp,
  prefixUpperBound,
  validatePrefix,
} from './validate.js';
export type { NormalizedPageOp } from './validate-page.js';
