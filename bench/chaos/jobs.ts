/** The chaos nodes' jobs (bench/chaos/node.ts) as the driver's checker needs to know them. */
export const CHAOS_JOBS = {
  tick: { every: '1s', leaseMs: 3000 },
  sharded: { every: '2s', leaseMs: 3000, shards: 3 },
} as const;
