/**
 * Redirect targets: only paths of this dashboard, judged on the URL a browser would actually go to.
 *
 * The candidate is resolved the way a browser resolves a `Location` (WHATWG URL: `\` is `/`,
 * tabs and newlines are dropped, `.`/`%2e` segments collapse) against this dashboard's own
 * origin; it must stay on that origin, and only the normalised path and query are emitted. A
 * normalised path that a browser would read as another host (`//evil.com`, `/\evil.com`) or whose
 * first segment is an escaped slash or backslash (`/%2F…`, `/%5C…`, which a proxy might decode) is
 * refused too. Control characters and backslashes in the candidate refuse it outright: the
 * dashboard's own links never hold them.
 */

/** A stand-in origin: the dashboard's own (its real host does not matter for a path). */
const SELF = 'http://dashboard.invalid';

/** The normalised local path+query of `value`, or `fallback` if it is not one. */
export function localPath(value: unknown, fallback: string): string {
  if (typeof value !== 'string' || value.length > 2048 || !value.startsWith('/')) return fallback;
  if (/[\\\p{Cc}]/u.test(value)) return fallback;
  let url: URL;
  try {
    url = new URL(value, SELF);
  } catch {
    return fallback;
  }
  if (url.origin !== SELF) return fallback;
  const path = `${url.pathname}${url.search}`;
  if (!path.startsWith('/') || /^\/([/\\]|%2f|%5c)/i.test(path)) return fallback;
  return path;
}

/** `path` (already local) with `name` removed from its query. */
export function withoutParam(path: string, name: string): string {
  const url = new URL(path, SELF);
  url.searchParams.delete(name);
  return `${url.pathname}${url.search}`;
}

/** `path` (already local) with `params` set in its query. */
export function withParams(path: string, params: Record<string, string>): string {
  const url = new URL(path, SELF);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return `${url.pathname}${url.search}`;
}
