import type { SpanContext } from '@opentelemetry/api';
import type { Lease, WriteOp } from '../store/types.js';
import type { OccurrenceId } from './keys.js';
import type { RunSource } from './types.js';

/** A claimed occurrence, ready to run: the store granted `lease` (and `gate` for fleet-wide overlap control). */
export interface Claim {
  occ: OccurrenceId;
  lease: Lease;
  gate: Lease | undefined;
  /** Monotonic time just before the acquire that granted the leases was sent. */
  sentAt: number;
  attempt: number;
  source: RunSource;
  data: unknown;
  /** Written together with the first in-flight record (recovery: the dead attempt's history). */
  startWrites?: WriteOp[];
  /** The recorded `oncely.claim` span that won it: its runs link to it (tracing.ts). */
  claimSpan?: SpanContext | undefined;
}

/** What an in-flight record holds: enough for another node to recover the occurrence. */
export interface InflightRecord {
  job: string;
  scheduleId?: string;
  fireTime: number;
  shard?: number;
  attempt: number;
  token: number;
  node: string;
  source: RunSource;
  data?: unknown;
  /** Store time the attempt started (history() shows it as running since then). */
  startedAt: number;
  /** Store time of the claim and the lease length: the lease cannot end before claimedAt + leaseMs. */
  claimedAt: number;
  leaseMs: number;
}
