import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/harness/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Server-backed suites share one throwaway server per backend; files run in parallel workers.
    pool: 'forks',
    // The JSON report is what .ci/run counts for its closing `tests: …` line.
    reporters: ['default', ['json', { outputFile: '.test-artifacts/vitest.json' }]],
  },
});
