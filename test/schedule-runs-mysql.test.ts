/**
 * The schedule features that order and limit runs (issue 32: backfill, overlap policies, fleet
 * limits) on mysql, apart from the core scheduler suite (scheduler-mysql.test.ts) and from the
 * other features (schedule-features-mysql.test.ts), so that the files run side by side.
 */
import { openStore } from '../src/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeBackfill } from './harness/backfill-suite.js';
import { describeLimits } from './harness/limits-suite.js';
import { describeOverlap } from './harness/overlap-suite.js';

const target = serverBackend('mysql');
const prefix = testPrefix('featmysql');
describeBackfill('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeOverlap('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeLimits('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
