import { OncelyError } from '../../core/errors.js';
import { redactUrl } from '../../core/redact.js';

/** What an `etcd://` or `etcds://` URL says: the member endpoints and, optionally, a user. */
export interface EtcdUrl {
  /** `http://host:port` or `https://host:port`, in the URL's order (the first is the clock's). */
  endpoints: string[];
  username: string | undefined;
  password: string | undefined;
}

const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::(\d{1,5}))?$/;

/**
 * Validates `etcd://[user:password@]host[:port][,host[:port]…][/]` (`etcds://` for TLS; port
 * 2379 by default) and splits it into endpoints; the password is kept apart, never in a message.
 */
export function parseEtcdUrl(url: string): EtcdUrl {
  const bad = (why: string) =>
    new OncelyError(
      'INVALID_ARGUMENT',
      `bad etcd URL ${JSON.stringify(redactUrl(url))}: ${why}; use etcd://[user:password@]host[:port][,host[:port]…] or etcds://… for TLS`,
    );
  const match = /^(etcds?):\/\/([^/?#]*)\/?$/i.exec(url);
  if (!match) {
    if (/^etcds?:\/\/[^/?#]*[?#]/i.test(url)) throw bad('query parameters and fragments are not supported');
    if (/^etcds?:\/\/[^/]*\/./i.test(url)) throw bad('a path is not supported');
    throw bad('expected etcd:// or etcds:// followed by hosts');
  }
  const tls = match[1]!.toLowerCase() === 'etcds';
  let authority = match[2]!;
  let username: string | undefined;
  let password: string | undefined;
  const at = authority.lastIndexOf('@');
  if (at >= 0) {
    const userinfo = authority.slice(0, at);
    authority = authority.slice(at + 1);
    const colon = userinfo.indexOf(':');
    try {
      username = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon));
      password = colon < 0 ? undefined : decodeURIComponent(userinfo.slice(colon + 1));
    } catch {
      throw bad('the user or password is not valid percent-encoding');
    }
    if (username === '') throw bad('a password needs a user name (etcd users have names)');
    if (password === '') password = undefined;
  }
  if (authority === '') throw bad('the host is missing');
  const endpoints = authority.split(',').map((host) => {
    const hostMatch = HOST.exec(host);
    if (!hostMatch) throw bad(`${JSON.stringify(host)} is not a host[:port]`);
    const port = hostMatch[1] === undefined ? 2379 : Number(hostMatch[1]);
    if (port < 1 || port > 65_535) throw bad(`port ${port} is out of range`);
    const name = hostMatch[1] === undefined ? host : host.slice(0, host.lastIndexOf(':'));
    return `${tls ? 'https' : 'http'}://${name}:${port}`;
  });
  return { endpoints, username, password };
}
