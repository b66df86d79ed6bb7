/**
 * Messages between the demo's parent and its node processes (over the Node IPC channel). The
 * ledger, not these messages, is the evidence the summary counts: messages only drive the live
 * view and the choice of when to kill a node.
 */
import type { RunSource } from '../../scheduler/types.js';

export interface RunInfo {
  job: string;
  fireTime: number;
  shard: number | null;
  attempt: number;
  token: number;
  source: RunSource;
}

export type NodeMessage =
  | { type: 'ready'; node: string; pid: number }
  | { type: 'started'; node: string; run: RunInfo }
  | { type: 'succeeded'; node: string; run: RunInfo }
  | { type: 'failed'; node: string; run: RunInfo; error: string }
  | { type: 'skipped'; node: string; job: string; fireTime: number; shard: number | null }
  /** `skipped`: every fire time from `firstFireTime` to `fireTime` nobody claimed in time (`count` of them). */
  | {
      type: 'misfired';
      node: string;
      job: string;
      fireTime: number;
      firstFireTime: number;
      count: number | null;
      action: 'skipped' | 'run';
    }
  | { type: 'error'; node: string; during: string; error: string }
  /** Asked to crash but not running the target job any more: the parent picks another moment. */
  | { type: 'crash-declined'; node: string };

export type ParentMessage =
  /** Kill yourself with SIGKILL at the next moment this node is mid-way through a run of `job`. */
  { type: 'crash'; job: string };

/** argv of a node process: `--node NAME --db PATH --ledger PATH --index I --count N`. */
export interface NodeArgs {
  node: string;
  db: string;
  ledger: string;
  /** This node's place among `count` (staggers its wake-ups, see node-process.ts). */
  index: number;
  count: number;
}
