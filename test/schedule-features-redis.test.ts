/**
 * The schedule features (issue 32: audit, jitter, exclusions, next(), bounds, pauses) on redis,
 * apart from the core scheduler suite (scheduler-redis.test.ts) and from backfill, overlap policies
 * and fleet limits (schedule-runs-redis.test.ts), so that the files run side by side.
 */
import { openStore } from '../src/index.js';
import { describeAudit } from './harness/audit-suite.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeBounds } from './harness/bounds-suite.js';
import { describeExclude } from './harness/exclude-suite.js';
import { describeJitter } from './harness/jitter-suite.js';
import { describeNext } from './harness/next-suite.js';
import { describePause } from './harness/pause-suite.js';

const target = serverBackend('redis');
const prefix = testPrefix('featredis');
describeAudit('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeJitter('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeExclude('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeNext('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeBounds('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describePause('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
