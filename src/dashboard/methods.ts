/**
 * The methods each registered route answers, so that a request for a known path with the wrong
 * method gets `405 Method Not Allowed` with an `Allow` header (RFC 9110) instead of a 404 that
 * says the page does not exist.
 *
 * @example
 * const methods = new RouteMethods();
 * app.addHook('onRoute', (route) => methods.add(route.url, route.method));
 * methods.allowed('/api/jobs/tick/pause'); // ['POST']
 */
export class RouteMethods {
  private readonly routes: { pattern: RegExp; methods: readonly string[] }[] = [];

  /** Records a route: `url` as registered (`/jobs/:name`), `method` one or several. */
  add(url: string, method: string | readonly string[]): void {
    // A parameter matches one path segment, as in the router (names are percent-encoded: no '/').
    const source = url
      .split('/')
      .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/');
    this.routes.push({ pattern: new RegExp(`^${source}$`), methods: [method].flat() });
  }

  /** Every method some route answers on `path` (a request path without its query), sorted; HEAD with GET. */
  allowed(path: string): string[] {
    const out = new Set<string>();
    for (const route of this.routes) {
      if (!route.pattern.test(path)) continue;
      for (const m of route.methods) {
        out.add(m);
        if (m === 'GET') out.add('HEAD');
      }
    }
    return [...out].sort();
  }
}
