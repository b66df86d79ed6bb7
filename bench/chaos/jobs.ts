/** The chaos nodes' jobs (bench/chaos/node.ts) as the driver's checker needs to know them. */
export const CHAOS_JOBS = {
  tick: { every: '1s', leaseMs: 3000 },
  sharded: { every: '2s', leaseMs: 3000, shards: 3 },
  // Stored schedules (no trigger of its own): claimed in pages of occurrences on a store that
  // offers them, each schedule with its own overlap gate.
  stored: { every: '2s', leaseMs: 3000, schedules: 12 },
} as const;

/** The stored schedules' ids (the driver upserts them once, before the nodes start). */
export const STORED_IDS = Array.from({ length: CHAOS_JOBS.stored.schedules }, (_, i) => `user-${i}`);
