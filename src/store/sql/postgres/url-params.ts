import { invalidArgument } from '../../../core/errors.js';
import { didYouMean } from '../../../core/options.js';
import { redactUrl } from '../../../core/redact.js';

/**
 * Query parameters of a postgres:// URL that `pg` (8.x, through pg-connection-string) acts on.
 * `pg` ignores any other name without a word, so a misspelt one would go unnoticed: `?sslmod=require`
 * would connect without TLS.
 */
export const PG_URL_PARAMS: readonly string[] = [
  'sslmode',
  'ssl',
  'sslcert',
  'sslkey',
  'sslrootcert',
  'sslnegotiation',
  'uselibpqcompat',
  'application_name',
  'fallback_application_name',
  'options',
  'client_encoding',
  'statement_timeout',
  'lock_timeout',
  'idle_in_transaction_session_timeout',
  'query_timeout',
  'replication',
  'binary',
  'host',
  'port',
  'user',
  'password',
  'database',
  'db',
  'encoding',
];

/** Parameters people reach for that `pg` would ignore, with what to do instead. */
const INSTEAD: Record<string, string> = {
  connect_timeout: 'use the connectTimeoutMs option of openStore (pg ignores connect_timeout in a URL)',
  connectTimeout: 'use the connectTimeoutMs option of openStore',
  dbname: 'put the database in the path: postgres://user@host/DATABASE',
};

/** Throws `INVALID_ARGUMENT` for a query parameter `pg` would ignore (the password never shown). */
export function checkPgUrlParams(url: string): void {
  let params: URLSearchParams;
  try {
    params = new URL(url).searchParams;
  } catch {
    return; // not a URL: pg reads it (or refuses it) itself
  }
  for (const name of new Set(params.keys())) {
    if (PG_URL_PARAMS.includes(name)) continue;
    const instead = INSTEAD[name];
    throw invalidArgument(
      `store URL ${JSON.stringify(redactUrl(url))}: unknown query parameter ${JSON.stringify(name)}` +
        (instead !== undefined
          ? `: ${instead}`
          : `${didYouMean(name, PG_URL_PARAMS)}; PostgreSQL URLs take ${PG_URL_PARAMS.slice(0, 8).join(', ')}, …`),
    );
  }
}
