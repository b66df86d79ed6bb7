/**
 * The schedule features that order and limit runs (issue 32: backfill, overlap policies, fleet
 * limits) on sqlite, apart from the core scheduler suite (scheduler-sqlite.test.ts) and from the
 * other features (schedule-features-sqlite.test.ts), so that the files run side by side.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openStore } from '../src/index.js';
import { describeBackfill } from './harness/backfill-suite.js';
import { describeLimits } from './harness/limits-suite.js';
import { describeOverlap } from './harness/overlap-suite.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-feat-sqlite-'));
const url = `sqlite:${join(dir, 'scheduler.db')}`;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Every node opens its own connection to one file, as separate processes would.
describeBackfill('sqlite', () => openStore(url, { prefix: 's_' }));
describeOverlap('sqlite', () => openStore(url, { prefix: 's_' }));
describeLimits('sqlite', () => openStore(url, { prefix: 's_' }));
