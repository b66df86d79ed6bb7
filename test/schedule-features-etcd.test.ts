/**
 * The schedule features (issue 32: audit, jitter, exclusions, next(), bounds, pauses, backfill,
 * overlap policies, fleet limits) on etcd, apart from the core scheduler suite (scheduler-etcd.test.ts) so that
 * the two files run side by side.
 */
import { openStore } from '../src/index.js';
import { describeAudit } from './harness/audit-suite.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeBackfill } from './harness/backfill-suite.js';
import { describeBounds } from './harness/bounds-suite.js';
import { describeExclude } from './harness/exclude-suite.js';
import { describeJitter } from './harness/jitter-suite.js';
import { describeLimits } from './harness/limits-suite.js';
import { describeNext } from './harness/next-suite.js';
import { describeOverlap } from './harness/overlap-suite.js';
import { describePause } from './harness/pause-suite.js';

const target = serverBackend('etcd');
const prefix = testPrefix('featetcd');
describeAudit('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeJitter('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeExclude('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeNext('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeBounds('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describePause('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeBackfill('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeOverlap('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeLimits('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
