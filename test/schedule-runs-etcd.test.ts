/**
 * The schedule features that order and limit runs (issue 32: backfill, overlap policies, fleet
 * limits) on etcd, apart from the core scheduler suite (scheduler-etcd.test.ts) and from the
 * other features (schedule-features-etcd.test.ts), so that the files run side by side.
 */
import { openStore } from '../src/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeBackfill } from './harness/backfill-suite.js';
import { describeLimits } from './harness/limits-suite.js';
import { describeOverlap } from './harness/overlap-suite.js';

const target = serverBackend('etcd');
const prefix = testPrefix('featetcd');
describeBackfill('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeOverlap('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeLimits('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
