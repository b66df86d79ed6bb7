/**
 * The schedule features (issue 32: audit, jitter, exclusions, next(), bounds, pauses) on mysql,
 * apart from the core scheduler suite (scheduler-mysql.test.ts) and from backfill, overlap policies
 * and fleet limits (schedule-runs-mysql.test.ts), so that the files run side by side.
 */
import { openStore } from '../src/index.js';
import { describeAudit } from './harness/audit-suite.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeBounds } from './harness/bounds-suite.js';
import { describeExclude } from './harness/exclude-suite.js';
import { describeJitter } from './harness/jitter-suite.js';
import { describeNext } from './harness/next-suite.js';
import { describePause } from './harness/pause-suite.js';

const target = serverBackend('mysql');
const prefix = testPrefix('featmysql');
describeAudit('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeJitter('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeExclude('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeNext('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeBounds('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describePause('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
