import { invalidArgument } from '../../../core/errors.js';

/**
 * oncely's own settings in a PostgreSQL URL's query string, for where only a URL can be given
 * (`openStore(url)`, the CLI's `--store`, `ONCELY_STORE`). Names start with `oncely_`, which no
 * libpq or pg parameter does; they are removed before pg sees the URL, and any other `oncely_…`
 * name is refused (a misspelt setting is never ignored).
 *
 *   postgres://app@pgbouncer:6432/app?oncely_prepared_statements=false
 */
export const PREPARED_STATEMENTS_PARAM = 'oncely_prepared_statements';

export interface PostgresUrlOptions {
  /** The URL without oncely's parameters (every other byte as given). */
  url: string;
  preparedStatements?: boolean;
}

function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

/** Splits oncely's parameters off `url`; `INVALID_ARGUMENT` for a bad value, a repeat or an unknown `oncely_` name. */
export function takeUrlOptions(url: string): PostgresUrlOptions {
  const hash = url.indexOf('#');
  const end = hash === -1 ? url.length : hash;
  const start = url.indexOf('?');
  if (start === -1 || start > end) return { url };
  const kept: string[] = [];
  const values: string[] = [];
  for (const part of url.slice(start + 1, end).split('&')) {
    const eq = part.indexOf('=');
    const name = decodeName(eq === -1 ? part : part.slice(0, eq));
    if (!name.toLowerCase().startsWith('oncely_')) {
      kept.push(part);
      continue;
    }
    if (name !== PREPARED_STATEMENTS_PARAM)
      throw invalidArgument(
        `unknown store URL parameter ${JSON.stringify(name)}; oncely's PostgreSQL URL parameters: ${PREPARED_STATEMENTS_PARAM}=true|false`,
      );
    values.push(eq === -1 ? '' : decodeName(part.slice(eq + 1)));
  }
  const rest = kept.filter((p) => p !== '').join('&');
  const stripped = `${url.slice(0, start)}${rest === '' ? '' : `?${rest}`}${url.slice(end)}`;
  if (values.length === 0) return { url: stripped };
  if (values.length > 1)
    throw invalidArgument(
      `store URL parameter ${PREPARED_STATEMENTS_PARAM} is given ${values.length} times; give it once`,
    );
  const value = values[0]!;
  if (value !== 'true' && value !== 'false')
    throw invalidArgument(
      `store URL parameter ${PREPARED_STATEMENTS_PARAM} must be true or false; got ${JSON.stringify(value)}`,
    );
  return { url: stripped, preparedStatements: value === 'true' };
}
