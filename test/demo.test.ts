import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('npm run demo:locks (the README’s smaller lock demo)', () => {
  it('runs three processes on SQLite, survives a SIGKILLed holder, and reports no overlap', () => {
    const result = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'src/demo/lock-demo.ts', '--duration', '8s'],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/overlapping holds\s+0 \(must be 0\)/);
    expect(result.stdout).toMatch(/tokens out of order\s+0 \(must be 0\)/);
    expect(result.stdout).toMatch(/node-[123] killed holding token \d+; lock recovered after [2-9]\.\d\d s/);
    expect(result.stdout.trim().split('\n').at(-1)).toBe('OK');
  }, 60_000);

  it('refuses a bad duration with exit code 2', () => {
    const result = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'src/demo/lock-demo.ts', '--duration', 'soon'],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/--duration/);
  });
});
