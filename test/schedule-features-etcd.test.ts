/**
 * The schedule features (issue 32: audit, jitter, exclusions, next(), bounds, pauses) on etcd,
 * apart from the core scheduler suite (scheduler-etcd.test.ts) and from backfill, overlap policies
 * and fleet limits (schedule-runs-etcd.test.ts), so that the files run side by side.
 */
import { openStore } from '../src/index.js';
import { describeAudit } from './harness/audit-suite.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeBounds } from './harness/bounds-suite.js';
import { describeExclude } from './harness/exclude-suite.js';
import { describeJitter } from './harness/jitter-suite.js';
import { describeNext } from './harness/next-suite.js';
import { describePause } from './harness/pause-suite.js';

const target = serverBackend('etcd');
const prefix = testPrefix('featetcd');
describeAudit('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeJitter('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeExclude('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeNext('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeBounds('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
describePause('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });
