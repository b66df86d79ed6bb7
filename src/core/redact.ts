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
  return text.split(secret).join('***');
}

/** The password in a connection URL, decoded, to redact from error messages; `undefined` if none. */
export function urlPassword(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    const password = new URL(url).password;
    return password ? decodeURIComponent(password) : undefined;
  } catch {
    return undefined;
  }
}
