/**
 * The schedule features (issue 32: audit, jitter, exclusions, next(), bounds, pauses, backfill,
 * overlap policies, fleet limits) on postgres, apart from the core scheduler suite (scheduler-postgres.test.ts) so that
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

const target = serverBackend('postgres');
const prefix = testPrefix('featpg');
describeAudit('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeJitter('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeExclude('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeNext('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeBounds('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describePause('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeBackfill('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeOverlap('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeLimits('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
