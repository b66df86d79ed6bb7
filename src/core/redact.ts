/**
 * Query parameters a driver reads as a secret: PostgreSQL's `password` and `sslpassword`
 * (pg-connection-string), mysql2's `password` and its multi-factor `password1`–`password3`, and
 * the spellings other drivers accept for a password. Compared case-insensitively.
 */
const SECRET_PARAMS: ReadonlySet<string> = new Set([
  'password',
  'password1',
  'password2',
  'password3',
  'sslpassword',
  'passwd',
  'pwd',
  'pass',
]);

/** `name=value` pairs of a query string whose name is a secret's (the value as written, not decoded). */
const SECRET_PARAM = /([?&;](?:password[123]?|sslpassword|passwd|pwd|pass)=)([^&#;]*)/gi;

const isSecretParam = (name: string) => SECRET_PARAMS.has(name.toLowerCase());

/** The password of `//user:password@`, as written (also in a URL the WHATWG parser rejects). */
const USERINFO_PASSWORD = /\/\/[^:/@]*:([^@]*)@/;

/**
 * Replaces the password in a connection URL — `user:password@` and any secret query parameter
 * (`?password=`, `?sslpassword=`, …) — with `***`, so it is never printed or logged.
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    let changed = false;
    if (parsed.password) {
      parsed.password = '***';
      changed = true;
    }
    for (const name of [...parsed.searchParams.keys()])
      if (isSecretParam(name)) {
        parsed.searchParams.set(name, '***');
        changed = true;
      }
    // `searchParams.set` re-encodes the rest of the query; the brackets of `***` stay readable.
    return changed ? parsed.toString().replace(/=%2A%2A%2A/g, '=***') : url;
  } catch {
    // Not a URL the WHATWG parser accepts: blank out anything between "://user:" and "@", and
    // the secret parameters' values.
    return url.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@').replace(SECRET_PARAM, '$1***');
  }
}

/** Redacts every occurrence of each secret in `text`, for driver messages that echo the URL. */
export function redactSecret(text: string, secret: string | readonly string[] | undefined): string {
  if (secret === undefined) return text;
  if (typeof secret !== 'string') return secret.reduce((out, s) => redactSecret(out, s), text);
  if (!secret) return text;
  // A very short password would blank out letters all over the message ("o***en"): only its
  // URL forms (`:secret@`, `=secret`, also percent-encoded) are redacted then.
  if (secret.length < 4) {
    let out = text;
    for (const form of new Set([secret, encodeURIComponent(secret)])) {
      out = out.split(`:${form}@`).join(':***@');
      out = out.replace(SECRET_PARAM, (all, name: string, value: string) =>
        value === form ? `${name}***` : all,
      );
    }
    return out;
  }
  return text.split(secret).join('***');
}

/** The password in a connection URL's `user:password@`, decoded; `undefined` if none (or not decodable). */
export function urlPassword(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  let password: string;
  try {
    password = new URL(url).password;
  } catch {
    // Not a URL the WHATWG parser accepts (a host list: etcd://u:p@h1:2379,h2:2379): the text
    // between "//user:" and "@".
    password = USERINFO_PASSWORD.exec(url)?.[1] ?? '';
  }
  return decoded(password);
}

/**
 * Every secret a connection URL holds, decoded: the `user:password@` password and the value of
 * each secret query parameter (see SECRET_PARAMS). Empty for a URL without any.
 */
export function urlSecrets(url: string | undefined): string[] {
  if (url === undefined) return [];
  const out = new Set<string>();
  const password = urlPassword(url);
  if (password !== undefined) out.add(password);
  // As written too (also when it does not decode).
  const raw = USERINFO_PASSWORD.exec(url)?.[1];
  if (raw) out.add(raw);
  for (const [, , value] of url.matchAll(SECRET_PARAM)) {
    // As a query string decodes it (`+` a space), as percent-decoding alone does, and as written.
    for (const secret of [decoded(value!.replace(/\+/g, ' ')), decoded(value!), value])
      if (secret) out.add(secret);
  }
  return [...out];
}

/** Percent-decoded; `undefined` for nothing, or for text that is not valid percent-encoding. */
function decoded(text: string): string | undefined {
  if (!text) return undefined;
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
