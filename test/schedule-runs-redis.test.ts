/**
 * The schedule features that order and limit runs (issue 32: backfill, overlap policies, fleet
 * limits) on redis, apart from the core scheduler suite (scheduler-redis.test.ts) and from the
 * other features (schedule-features-redis.test.ts), so that the files run side by side.
 */
import { openStore } from '../src/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeBackfill } from './harness/backfill-suite.js';
import { describeLimits } from './harness/limits-suite.js';
import { describeOverlap } from './harness/overlap-suite.js';

const target = serverBackend('redis');
const prefix = testPrefix('featredis');
describeBackfill('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeOverlap('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeLimits('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });
