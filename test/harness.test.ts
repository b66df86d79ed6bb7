import { describe, expect, it } from 'vitest';
import { serverBackend } from './harness/backends.js';

describe('test harness', () => {
  it.each([
    'postgres',
    'mysql',
    'redis',
  ] as const)('provides a %s server (or a loud skip outside CI)', (name) => {
    const target = serverBackend(name);
    if (process.env.CI === 'true') expect(target.url).toMatch(/^(postgres|mysql|redis):\/\//);
    else expect(target.url !== undefined || target.skip !== undefined).toBe(true);
  });
});
