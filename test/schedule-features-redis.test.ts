/**
 * The schedule features (issue 32: audit, jitter, exclusions, next(), bounds, pauses, backfill,
 * overlap policies, fleet limits) on redis, apart from the core scheduler suite (scheduler-redis.test.ts) so that
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

const target = serverBackend('redis');
const prefix = testPrefix('featredis');
describeAudit('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeJitter('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeExclude('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeNext('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeBounds('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describePause('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeBackfill('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeOverlap('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeLimits('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
