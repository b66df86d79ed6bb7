/**
 * The schedule features that order and limit runs (issue 32: backfill, overlap policies, fleet
 * limits) on memory, apart from the core scheduler suite (scheduler-memory.test.ts) and from the
 * other features (schedule-features-memory.test.ts), so that the files run side by side.
 */
import { openStore } from '../src/index.js';
import { testPrefix } from './harness/backends.js';
import { describeBackfill } from './harness/backfill-suite.js';
import { describeLimits } from './harness/limits-suite.js';
import { describeOverlap } from './harness/overlap-suite.js';

// Every node opens `memory:NAME`: one shared space, as one process's nodes would share it.
const space = `memory:${testPrefix('feat')}`;
describeBackfill('memory', () => openStore(space), { validation: true });
describeOverlap('memory', () => openStore(space));
describeLimits('memory', () => openStore(space), { validation: true });
