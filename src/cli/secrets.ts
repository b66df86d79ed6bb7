/**
 * The secrets of this `oncely` process, which it must never print, store or hand to a command:
 * the password of the store URL (from `--store` or `$ONCELY_STORE`; decoded, as written and
 * percent-encoded) and `$ONCELY_DASHBOARD_TOKEN` (as is and percent-encoded, as in `?token=`).
 *
 * They are registered before anything can print them (main.ts registers the environment's,
 * store-option.ts the URL it opens). Every message the CLI writes (errors, log lines, tables,
 * JSON) goes through `scrubSecrets`, and `oncely run` redacts command output with
 * `secretsRedactor()` before it is logged or stored in history.
 *
 * Secrets shorter than MIN_SECRET_LENGTH (8) are not searched for (they would match ordinary
 * words); they are refused where they are configured instead: `oncely run` refuses such a store
 * password (refuseShortStoreSecret), the dashboard a token under 16 characters. A URL is always
 * shown through `redactUrl`, which hides its password by position, whatever its length.
 */
import { invalidArgument } from '../core/errors.js';
import { redactUrl, urlSecrets } from '../core/redact.js';
import { MIN_SECRET_LENGTH, Redactor } from './redact.js';

const secrets = new Set<string>();
/** Rebuilt on the next use after a registration (registrations happen at start-up only). */
let current: Redactor | undefined;

function add(secret: string | undefined): void {
  if (!secret || secrets.has(secret)) return;
  secrets.add(secret);
  current = undefined;
}

/** Registers the passwords of a store URL (`user:password@`, `?password=`, `?sslpassword=`, …; nothing for a URL without one). */
export function registerStoreUrl(url: string): void {
  // Decoded and as written (urlSecrets), and percent-encoded.
  for (const secret of urlSecrets(url)) {
    add(secret);
    add(encodeURIComponent(secret));
  }
}

/** Registers the dashboard token. */
export function registerDashboardToken(token: string | undefined): void {
  if (token === undefined || token.trim() === '') return;
  add(token);
  add(encodeURIComponent(token));
}

/** Registers the secrets found in oncely's environment variables (`ONCELY_STORE`, `ONCELY_DASHBOARD_TOKEN`). */
export function registerEnvSecrets(env: NodeJS.ProcessEnv): void {
  const store = env.ONCELY_STORE;
  if (store !== undefined && store !== '') registerStoreUrl(store);
  registerDashboardToken(env.ONCELY_DASHBOARD_TOKEN);
}

/** A redactor of every secret registered so far. */
export function secretsRedactor(): Redactor {
  current ??= new Redactor(secrets);
  return current;
}

/** `text` with every registered secret replaced by `***`. */
export function scrubSecrets(text: string): string {
  return secretsRedactor().redact(text);
}

/**
 * `INVALID_ARGUMENT` (exit 2) when the store URL has a password shorter than MIN_SECRET_LENGTH:
 * `oncely run` hides its secrets in the commands' output, and could not hide that one.
 */
export function refuseShortStoreSecret(url: string): void {
  const short = urlSecrets(url).find((s) => [...s].length < MIN_SECRET_LENGTH);
  if (short === undefined) return;
  throw invalidArgument(
    `the password in store URL "${redactUrl(url)}" has ${[...short].length} characters: oncely run hides ` +
      `its secrets in the output of commands, and does so only from ${MIN_SECRET_LENGTH} characters on ` +
      '(a shorter one would also match ordinary words); give the store user a longer password',
  );
}
