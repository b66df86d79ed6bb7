/**
 * Secrets the CLI must never print: the raw store URL as given (it may carry a password) and that
 * password itself. Every message the CLI writes (errors, log lines, tables) goes through
 * `scrubSecrets`, so a driver error that echoes its connection string cannot leak it.
 */
import { redactUrl, urlPassword } from '../core/redact.js';

/** Shorter passwords are hidden inside URLs only. */
const MIN_SCRUBBED_PASSWORD = 4;

const replacements: { secret: string; shown: string }[] = [];

/** Registers a store URL: later output shows it redacted and never shows its password. */
export function registerStoreUrl(url: string): void {
  const shown = redactUrl(url);
  if (shown !== url) replacements.push({ secret: url, shown });
  // The password alone, decoded and as written (percent-encoded), for messages that echo it
  // without the URL. Not when it is so short that blanking every occurrence would garble output
  // (`p` would turn "postgres" into "***ostgres") while hiding next to nothing.
  const password = urlPassword(url);
  const raw = /\/\/[^:/@]*:([^@]*)@/.exec(url)?.[1];
  for (const secret of new Set([password, raw])) {
    if (secret && secret.length >= MIN_SCRUBBED_PASSWORD) replacements.push({ secret, shown: '***' });
  }
}

/** `text` with every registered secret replaced (longest first, so a URL goes before its password). */
export function scrubSecrets(text: string): string {
  let out = text;
  for (const { secret, shown } of [...replacements].sort((a, b) => b.secret.length - a.secret.length)) {
    out = out.split(secret).join(shown);
  }
  return out;
}
