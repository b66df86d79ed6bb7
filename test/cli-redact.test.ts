/**
 * The pieces that keep oncely's secrets out of what `oncely run` hands to commands, prints and
 * stores, tested directly: the `Redactor` (also on text split into arbitrary chunks, and with
 * secrets too short to search for), the secrets a store URL and the dashboard token contribute, the environment of a
 * command, and how control characters are shown on a terminal. The end-to-end behaviour is in
 * cli-secrets.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { commandEnv, inheritedEnv } from '../src/cli/job-env.js';
import type { CliJob } from '../src/cli/jobs-file.js';
import { Redactor } from '../src/cli/redact.js';
import { printable, printableJson } from '../src/cli/terminal-text.js';
import type { JobContext } from '../src/scheduler/types.js';

/** Feeds `text` to a stream of `r` in pieces cut at `cuts`, returning the stream's whole output. */
function streamed(r: Redactor, text: string, cuts: number[]): string {
  const s = r.stream();
  let out = '';
  let from = 0;
  for (const cut of [...cuts, text.length]) {
    out += s.push(text.slice(from, cut));
    from = cut;
  }
  return out + s.end();
}

describe('Redactor', () => {
  it('replaces every occurrence of each secret, longest first', () => {
    const r = new Redactor(['p@ss word', 'p%40ss%20word', 'tok-0123456789abcdef']);
    expect(r.redact('url postgres://u:p%40ss%20word@db/x pw="p@ss word" ?token=tok-0123456789abcdef')).toBe(
      'url postgres://u:***@db/x pw="***" ?token=***',
    );
    expect(r.redact('nothing here')).toBe('nothing here');
    expect(new Redactor([undefined, '']).redact('a b')).toBe('a b');
  });

  it('never searches for a secret shorter than 8 characters: ordinary words stay as they are', () => {
    const r = new Redactor(['pw', 'x', 'short', '1234567', '12345678']);
    expect(r.redact('postgres://oncely:pw@db x-ray')).toBe('postgres://oncely:pw@db x-ray');
    // ONCELY_DASHBOARD_TOKEN=short used to turn the dashboard's refusal into "is too *** (5 characters)".
    expect(r.redact('ONCELY_DASHBOARD_TOKEN is too short (5 characters)')).toBe(
      'ONCELY_DASHBOARD_TOKEN is too short (5 characters)',
    );
    expect(r.redact('pin 1234567, code 12345678')).toBe('pin 1234567, code ***');
    expect(new Redactor(['pw', 'short']).empty).toBe(true);
  });

  it('catches a secret split across chunks, whatever the chunking', () => {
    const secrets = ['oncely-test-pw', 'tok_0123456789abcdef', 'ab'];
    const r = new Redactor(secrets);
    const text =
      'start oncely-test-pw mid tok_0123456789abcdef\nab,cab ab\noncely-test-pwoncely-test-pw end ab';
    const whole = r.redact(text);
    for (const s of secrets.slice(0, 2)) expect(whole).not.toContain(s);
    expect(whole).toBe('start *** mid ***\nab,cab ab\n****** end ab');
    // Every cut at one position, every pair of cuts, and one-character chunks.
    for (let i = 0; i <= text.length; i++) {
      expect(streamed(r, text, [i])).toBe(whole);
      for (let j = i; j <= text.length; j += 3) expect(streamed(r, text, [i, j])).toBe(whole);
    }
    expect(
      streamed(
        r,
        text,
        [...text].map((_, i) => i),
      ),
    ).toBe(whole);
  });

  it('returns complete lines at once and holds back at most the longest secret of a partial line', () => {
    const s = new Redactor(['oncely-test-pw']).stream();
    expect(s.push('first line\nsecond')).toBe('first line\n');
    expect(s.push(' line, then a long partial line')).toBe('second line, then a lon');
    expect(s.push('\n')).toBe('g partial line\n');
    expect(s.push('oncely-te')).toBe('');
    // Once a match starts before the held-back part, it is complete: out it goes, redacted.
    expect(s.push('st-pw!')).toBe('***');
    expect(s.end()).toBe('!');
    // Without secrets, nothing is held back.
    expect(new Redactor([]).stream().push('no newline')).toBe('no newline');
  });
});

describe('the secrets of the CLI', () => {
  it('registers the store password in every form and the dashboard token', async () => {
    const secrets = await import('../src/cli/secrets.js');
    secrets.registerStoreUrl('postgres://oncely:s3cr%40t-pw@db.internal:5432/app');
    secrets.registerEnvSecrets({ ONCELY_DASHBOARD_TOKEN: 'dash token/0123456789' });
    expect(
      secrets.scrubSecrets(
        'postgres://oncely:s3cr%40t-pw@db.internal:5432/app s3cr@t-pw s3cr%40t-pw ' +
          'dash token/0123456789 ?token=dash%20token%2F0123456789',
      ),
    ).toBe('postgres://oncely:***@db.internal:5432/app *** *** *** ?token=***');
  });
});

describe('the environment of a command', () => {
  const job: CliJob = {
    index: 1,
    name: 'j',
    options: {},
    command: 'true',
    env: { DATABASE_URL: 'postgres://app:pw@db/app', ONCELY_JOB: 'overridden' },
    cwd: undefined,
  };
  const ctx = {
    job: 'j',
    fireTime: new Date(0),
    token: 7,
    attempt: 1,
    signal: new AbortController().signal,
  } as unknown as JobContext;

  it("drops every ONCELY_* setting of oncely's own environment, keeps the rest and the job's env", () => {
    const parent = {
      PATH: '/bin',
      ONCELY_STORE: 'postgres://oncely:secret@db/x',
      ONCELY_DASHBOARD_TOKEN: 'token-0123456789abcdef',
      ONCELY_DEBUG: '1',
    };
    expect(inheritedEnv(parent)).toEqual({ PATH: '/bin' });
    expect(commandEnv(job, ctx, 'n1', parent)).toEqual({
      PATH: '/bin',
      DATABASE_URL: 'postgres://app:pw@db/app',
      ONCELY_JOB: 'j',
      ONCELY_FIRE_TIME: '1970-01-01T00:00:00.000Z',
      ONCELY_NODE: 'n1',
      ONCELY_TOKEN: '7',
      ONCELY_ATTEMPT: '1',
      ONCELY_SCHEDULE_ID: '',
      ONCELY_SHARD_INDEX: '',
      ONCELY_SHARD_COUNT: '',
      ONCELY_SHARD_PARAM: '',
    });
  });
});

describe('terminal text', () => {
  it('shows control characters other than newline and tab as \\xNN', () => {
    expect(printable('a\x1b]0;pwned\x07\x1b[2Jb\tc\nd\re\x7f\u009b')).toBe(
      'a\\x1b]0;pwned\\x07\\x1b[2Jb\tc\nd\\x0de\\x7f\\x9b',
    );
  });

  it('keeps JSON the same value while escaping the control characters JSON.stringify leaves raw', () => {
    const value = { output: 'x\x1b[2J\u009b\x7fy' };
    const json = printableJson(JSON.stringify(value, null, 2));
    expect(json).not.toMatch(/\p{Cc}(?<!\n)/u);
    expect(JSON.parse(json)).toEqual(value);
  });
});
