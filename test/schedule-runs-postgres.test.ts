/**
 * The schedule features that order and limit runs (issue 32: backfill, overlap policies, fleet
 * limits) on postgres, apart from the core scheduler suite (scheduler-postgres.test.ts) and from the
 * other features (schedule-features-postgres.test.ts), so that the files run side by side.
 */
import { openStore } from '../src/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeBackfill } from './harness/backfill-suite.js';
import { describeLimits } from './harness/limits-suite.js';
import { describeOverlap } from './harness/overlap-suite.js';

const target = serverBackend('postgres');
const prefix = testPrefix('featpg');
describeBackfill('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeOverlap('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeLimits('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
