/**
 * The schedule features (issue 32: audit, jitter, exclusions, next(), bounds, pauses, backfill,
 * overlap policies, fleet limits) on sqlite, apart from the core scheduler suite (scheduler-sqlite.test.ts) so that
 * the two files run side by side.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openStore } from '../src/index.js';
import { describeAudit } from './harness/audit-suite.js';
import { describeBackfill } from './harness/backfill-suite.js';
import { describeBounds } from './harness/bounds-suite.js';
import { describeExclude } from './harness/exclude-suite.js';
import { describeJitter } from './harness/jitter-suite.js';
import { describeLimits } from './harness/limits-suite.js';
import { describeNext } from './harness/next-suite.js';
import { describeOverlap } from './harness/overlap-suite.js';
import { describePause } from './harness/pause-suite.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-feat-sqlite-'));
const url = `sqlite:${join(dir, 'scheduler.db')}`;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Every node opens its own connection to one file, as separate processes would.
describeAudit('sqlite', () => openStore(url, { prefix: 's_' }));
describeJitter('sqlite', () => openStore(url, { prefix: 's_' }));
describeExclude('sqlite', () => openStore(url, { prefix: 's_' }));
describeNext('sqlite', () => openStore(url, { prefix: 's_' }));
describeBounds('sqlite', () => openStore(url, { prefix: 's_' }));
describePause('sqlite', () => openStore(url, { prefix: 's_' }));
describeBackfill('sqlite', () => openStore(url, { prefix: 's_' }));
describeOverlap('sqlite', () => openStore(url, { prefix: 's_' }));
describeLimits('sqlite', () => openStore(url, { prefix: 's_' }));
