/**
 * README is the front door (issue 31): a newcomer reads it in five minutes. At most 250 lines;
 * everything else belongs in a guide under docs/.
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';

it('README.md is at most 250 lines', () => {
  const lines = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    .trimEnd()
    .split('\n');
  expect(lines.length).toBeLessThanOrEqual(250);
});
