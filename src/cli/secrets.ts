/**
 * The secrets of this `oncely` process, which it must never print, store or hand to a command:
 * the password of the store URL (from `--store` or `$ONCELY_STORE`; decoded, as written and
 * percent-encoded) and `$ONCELY_DASHBOARD_TOKEN` (as is and percent-encoded, as in `?token=`).
 *
 * They are registered before anything can print them (main.ts registers the environment's,
 * store-option.ts the URL it opens). Every message the CLI writes (errors, log lines, tables,
 * JSON) goes through `scrubSecrets`, and `oncely run` redacts command output with
 * `secretsRedactor()` before it is logged or stored in history.
 */
import { urlSecrets } from '../core/redact.js';
import { Redactor } from './redact.js';

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
