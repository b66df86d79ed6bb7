/** Replaces the password in a connection URL with `***`, so it is never printed or logged. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) {
      parsed.password = '***';
      return parsed.toString();
    }
    return url;
  } catch {
    // Not a URL the WHATWG parser accepts: blank out anything between "://user:" and "@".
    return url.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@');
  }
}

/** Redacts every occurrence of `secret` in `text`, for driver messages that echo the URL. */
export function redactSecret(text: string, secret: string | undefined): string {
  if (!secret) return text;
  // A very short password would blank out letters all over the message ("o***en"): only its
  // URL forms (`:secret@`, also percent-encoded) are redacted then.
  if (secret.length < 4) {
    let out = text;
    for (const form of new Set([secret, encodeURIComponent(secret)]))
      out = out.split(`:${form}@`).join(':***@');
    return out;
  }
  return text.split(secret).join('***');
}

/** The password in a connection URL, decoded, to redact from error messages; `undefined` if none. */
export function urlPassword(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  let password: string;
  try {
    password = new URL(url).password;
  } catch {
    // Not a URL the WHATWG parser accepts (a host list: etcd://u:p@h1:2379,h2:2379): the text
    // between "//user:" and "@".
    password = /\/\/[^:/@]*:([^@]*)@/.exec(url)?.[1] ?? '';
  }
  try {
    return password ? decodeURIComponent(password) : undefined;
  } catch {
    return undefined;
  }
}
