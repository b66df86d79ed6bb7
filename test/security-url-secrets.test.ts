/**
 * A store password given as a query parameter (`?password=`, `?sslpassword=`, mysql2's
 * `password1`…) is a secret like `user:password@` (issue 29, finding 1): it is redacted wherever a
 * URL is shown — openStore's errors, the Redis refusal of query parameters, the CLI's messages —
 * and registered as a secret of `oncely run` (its command output, history and log: the PostgreSQL
 * case is in test/cli-secrets.test.ts). Before the fix each of these printed it.
 */
import { describe, expect, it } from 'vitest';
import { redactSecret, redactUrl, urlSecrets } from '../src/core/redact.js';
import { openStore } from '../src/index.js';
import { requireBuiltCli, runCli } from './fixtures/cli/cli.js';
import { refused } from './harness/refused.js';

const PW = 'S3CRETPW';

describe('a password in a URL query parameter', () => {
  it('redactUrl hides every secret parameter, in any case, and keeps the rest readable', () => {
    expect(redactUrl(`postgres://root@127.0.0.1:1/test?password=${PW}&sslmode=disable`)).toBe(
      'postgres://root@127.0.0.1:1/test?password=***&sslmode=disable',
    );
    expect(redactUrl(`postgres://u:${PW}@h/db?sslpassword=k3yPass&application_name=a`)).toBe(
      'postgres://u:***@h/db?sslpassword=***&application_name=a',
    );
    expect(redactUrl(`mysql://u@h/db?PASSWORD=${PW}&password2=second1`)).toBe(
      'mysql://u@h/db?PASSWORD=***&password2=***',
    );
    // Not a URL the WHATWG parser takes (an etcd host list): redacted all the same.
    expect(redactUrl(`etcd://u@h1:2379,h2:2379/?pwd=${PW}&x=1`)).toBe(
      'etcd://u@h1:2379,h2:2379/?pwd=***&x=1',
    );
    expect(redactUrl('postgres://u@h/db?sslmode=require')).toBe('postgres://u@h/db?sslmode=require');
  });

  it('urlSecrets finds each one decoded and as written; redactSecret removes them all', () => {
    const url = `postgres://u:p%40ss@h/db?password=a%2Bb+c&sslpassword=${PW}`;
    const secrets = urlSecrets(url);
    expect(secrets).toEqual(expect.arrayContaining(['p@ss', 'a+b c', 'a+b+c', 'a%2Bb+c', PW]));
    expect(redactSecret(`failed for a+b c and p@ss and ${PW}`, secrets)).toBe(
      'failed for *** and *** and ***',
    );
    expect(urlSecrets('postgres://u@h/db')).toEqual([]);
  });

  it('openStore’s error names the URL without it (PostgreSQL, nothing listening)', async () => {
    const err = await refused(
      openStore(`postgres://root@127.0.0.1:1/test?password=${PW}`, {
        connectTimeoutMs: 2_000,
      }),
    );
    expect(err).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(err.message).toContain('password=***');
    expect(err.message).not.toContain(PW);
  });

  it('the Redis refusal of query parameters does not echo it', async () => {
    const err = await refused(openStore(`redis://127.0.0.1:1/0?password=${PW}`));
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(err.message).toContain('password=***');
    expect(err.message).not.toContain(PW);
  });

  it('oncely status prints neither the password nor its encoded forms', async () => {
    requireBuiltCli();
    for (const url of [
      `postgres://root@127.0.0.1:1/test?password=${PW}`,
      `mysql://root@127.0.0.1:1/test?password=${PW}`,
    ]) {
      const r = await runCli(['status', '--store', url]);
      expect(r.code, r.stderr).toBe(1);
      expect(`${r.stdout}${r.stderr}`).not.toContain(PW);
      expect(r.stderr).toContain('password=***');
    }
  });
});
