import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/harness/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Server-backed suites share one throwaway server per backend; files run in parallel workers.
    pool: 'forks',
    // Three files at a time: most of the suite waits on timers, servers and child processes, not
    // the CPU; vitest's default on a 2-core machine (cores − 1) ran the files one after another,
    // and two at a time took the suite past 20 minutes once the schedule features (issue 32) had
    // their own suites on every backend (schedule-features-<backend>.test.ts).
    maxWorkers: 3,
    minWorkers: 1,
    // The JSON report is what .ci/run counts for its closing `tests: …` line.
    reporters: ['default', ['json', { outputFile: '.test-artifacts/vitest.json' }]],
  },
});
