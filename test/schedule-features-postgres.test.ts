/**
 * The schedule features (issue 32: audit, jitter, exclusions, next(), bounds, pauses) on postgres,
 * apart from the core scheduler suite (scheduler-postgres.test.ts) and from backfill, overlap policies
 * and fleet limits (schedule-runs-postgres.test.ts), so that the files run side by side.
 */
import { openStore } from '../src/index.js';
import { describeAudit } from './harness/audit-suite.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeBounds } from './harness/bounds-suite.js';
import { describeExclude } from './harness/exclude-suite.js';
import { describeJitter } from './harness/jitter-suite.js';
import { describeNext } from './harness/next-suite.js';
import { describePause } from './harness/pause-suite.js';

const target = serverBackend('postgres');
const prefix = testPrefix('featpg');
describeAudit('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeJitter('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeExclude('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeNext('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeBounds('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
describePause('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });
