/**
 * The schedule features (issue 32: audit, jitter, exclusions, next(), bounds, pauses) on memory,
 * apart from the core scheduler suite (scheduler-memory.test.ts) and from backfill, overlap policies
 * and fleet limits (schedule-runs-memory.test.ts), so that the files run side by side.
 */
import { openStore } from '../src/index.js';
import { describeAudit } from './harness/audit-suite.js';
import { testPrefix } from './harness/backends.js';
import { describeBounds } from './harness/bounds-suite.js';
import { describeExclude } from './harness/exclude-suite.js';
import { describeJitter } from './harness/jitter-suite.js';
import { describeNext } from './harness/next-suite.js';
import { describePause } from './harness/pause-suite.js';

// Every node opens `memory:NAME`: one shared space, as one process's nodes would share it.
const space = `memory:${testPrefix('feat')}`;
describeAudit('memory', () => openStore(space));
describeJitter('memory', () => openStore(space), { validation: true });
describeExclude('memory', () => openStore(space), { validation: true });
describeNext('memory', () => openStore(space), { validation: true });
describeBounds('memory', () => openStore(space), { validation: true });
describePause('memory', () => openStore(space), { validation: true });
