import type { Store, WriteOp } from '../store/types.js';
import { MAX_BATCH } from '../store/validate.js';

/** Ops queued that make a batch worth sending without waiting for the turn of the event loop to end. */
const EARLY_FLUSH_OPS = 100;

interface Group {
  ops: WriteOp[];
  resolve: (results: boolean[]) => void;
  reject: (err: unknown) => void;
}

/**
 * Coalesces the store writes of many runs into few `store.apply` calls: every group submitted
 * in the same turn of the event loop goes out together (split at MAX_BATCH ops, never inside a
 * group). When 1,000 jobs fall due at once, their 1,000 "in flight" records are one round trip,
 * not 1,000 queued behind a connection pool.
 *
 * A group's ops stay in order and in one `apply` call, so they are applied together (atomically
 * on every shipped backend). Groups in one call are unrelated; a failed call rejects every group
 * in it and each caller decides whether to retry.
 */
export class WriteBatcher {
  private queue: Group[] = [];
  private queued = 0;
  private scheduled = false;

  constructor(private readonly store: Store) {}

  submit(ops: WriteOp[]): Promise<boolean[]> {
    if (ops.length === 0) return Promise.resolve([]);
    return new Promise<boolean[]>((resolve, reject) => {
      this.queue.push({ ops, resolve, reject });
      this.queued += ops.length;
      // A full batch goes at once: when 1,000 runs start together the first ones need not wait
      // until the last one has been set up.
      if (this.queued >= EARLY_FLUSH_OPS) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.flush();
        });
      }
    });
  }

  private flush(): void {
    const groups = this.queue;
    this.queue = [];
    this.queued = 0;
    let batch: Group[] = [];
    let size = 0;
    for (const g of groups) {
      if (size + g.ops.length > MAX_BATCH && batch.length > 0) {
        void this.send(batch);
        batch = [];
        size = 0;
      }
      batch.push(g);
      size += g.ops.length;
    }
    if (batch.length > 0) void this.send(batch);
  }

  private async send(groups: Group[]): Promise<void> {
    try {
      const results = await this.store.apply(groups.flatMap((g) => g.ops));
      let at = 0;
      for (const g of groups) {
        g.resolve(results.slice(at, at + g.ops.length));
        at += g.ops.length;
      }
    } catch (err) {
      for (const g of groups) g.reject(err);
    }
  }
}
