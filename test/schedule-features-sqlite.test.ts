/**
 * The schedule features (issue 32: audit, jitter, exclusions, next(), bounds, pauses) on sqlite,
 * apart from the core scheduler suite (scheduler-sqlite.test.ts) and from backfill, overlap policies
 * and fleet limits (schedule-runs-sqlite.test.ts), so that the files run side by side.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openStore } from '../src/index.js';
import { describeAudit } from './harness/audit-suite.js';
import { describeBounds } from './harness/bounds-suite.js';
import { describeExclude } from './harness/exclude-suite.js';
import { describeJitter } from './harness/jitter-suite.js';
import { describeNext } from './harness/next-suite.js';
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
