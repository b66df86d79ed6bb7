import { afterAll, beforeAll, describe } from 'vitest';
import { randomId } from '../core/ids.js';
import type { Store } from '../store/types.js';
import { describeApply } from './conformance-apply.js';
import { describeApplyDeletes } from './conformance-apply-deletes.js';
import { describeLeases } from './conformance-leases.js';
import { describeLocks } from './conformance-locks.js';
import { describeMetadata } from './conformance-metadata.js';
import { describePages } from './conformance-pages.js';
import { describeReads } from './conformance-reads.js';
import { describeRecords } from './conformance-records.js';
import { describeSweep } from './conformance-sweep.js';
import { describeWithLock } from './conformance-with-lock.js';
import type { StoreFactory, SuiteContext } from './suite-context.js';

export type { StoreFactory } from './suite-context.js';

/** What `describeStore(name, factory, options)` accepts. */
export interface DescribeStoreOptions {
  /** Skip the whole suite with this reason (e.g. the server could not be started outside CI). */
  skip?: string | undefined;
}

/**
 * The behaviour every oncely store must show, run against a real backend. Third-party stores can
 * certify themselves with it (vitest):
 *
 * @example
 * import { describeStore } from 'oncely/testing';
 * describeStore('my-store', async () => MyStore.open(process.env.MY_URL!));
 */
export function describeStore(name: string, factory: StoreFactory, options: DescribeStoreOptions = {}): void {
  const suite = options.skip ? describe.skip : describe;
  suite(`store conformance: ${name}`, () => {
    const opened: Store[] = [];
    let store: Store;
    const open = async () => {
      const s = await factory();
      opened.push(s);
      return s;
    };
    /** A name no other test (or earlier run on a reused server) uses. */
    const unique = (label: string) => `${label}-${randomId(6)}`;
    const ctx: SuiteContext = {
      get store() {
        return store;
      },
      open,
      unique,
    };

    beforeAll(async () => {
      store = await open();
    });
    afterAll(async () => {
      await Promise.all(opened.map((s) => s.close().catch(() => {})));
    });

    describeMetadata(ctx, factory);
    describeLocks(ctx);
    describeWithLock(ctx);
    describeLeases(ctx);
    describeRecords(ctx);
    describeApply(ctx);
    describeApplyDeletes(ctx);
    describeReads(ctx);
    describeSweep(ctx);
    describePages(ctx);
  });
}
