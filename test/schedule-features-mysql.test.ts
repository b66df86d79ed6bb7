/**
 * The schedule features (issue 32: audit, jitter, exclusions, next(), bounds, pauses, backfill,
 * overlap policies, fleet limits) on mysql, apart from the core scheduler suite (scheduler-mysql.test.ts) so that
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

const target = serverBackend('mysql');
const prefix = testPrefix('featmysql');
describeAudit('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeJitter('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeExclude('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeNext('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeBounds('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describePause('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeBackfill('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeOverlap('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeLimits('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
