import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openStore } from '../src/index.js';
import { describeScheduler } from './harness/scheduler-suite.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-sched-sqlite-'));
const url = `sqlite:${join(dir, 'scheduler.db')}`;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Every node opens its own connection to one file, as separate processes would.
describeScheduler('sqlite', () => openStore(url, { prefix: 's_' }), {
  processStore: () => ({ url, prefix: 's_' }),
});
