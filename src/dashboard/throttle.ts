import { isIP } from 'node:net';

/**
 * Throttles wrong dashboard tokens per client address.
 *
 * - Only a wrong token counts (a Bearer header or `?token=` that does not match). Requests without
 *   one, stale session cookies and successful requests never count.
 * - `maxFailures` wrong tokens within `windowMs` (counted from the first of them) start a cool-down
 *   of `coolDownMs`: meanwhile every token the address sends is answered 429 without being checked,
 *   right or wrong, so a guesser learns nothing. (Live session cookies still pass: a browser that
 *   is logged in keeps working.)
 * - Memory is bounded: at most `maxTracked` addresses, the least recently failed evicted first.
 * - An IPv6 client is tracked by its /64 (one host usually holds a whole /64); an IPv4-mapped
 *   address as the IPv4 address.
 */
export interface ThrottleLimits {
  maxFailures: number;
  windowMs: number;
  coolDownMs: number;
  maxTracked: number;
}

export const THROTTLE_LIMITS: ThrottleLimits = {
  maxFailures: 10,
  windowMs: 60_000,
  coolDownMs: 300_000,
  maxTracked: 10_000,
};

interface Failures {
  windowStart: number;
  count: number;
  /** 0 when not cooling down. */
  blockedUntil: number;
}

export class FailureThrottle {
  /** Least recently failed first (a failure re-inserts). */
  private readonly clients = new Map<string, Failures>();

  constructor(
    private readonly limits: ThrottleLimits = THROTTLE_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.clients.size;
  }

  /** Milliseconds the client must still wait; 0 = its tokens may be checked. */
  retryAfterMs(client: string): number {
    const f = this.clients.get(client);
    if (!f || f.blockedUntil === 0) return 0;
    const left = f.blockedUntil - this.now();
    if (left > 0) return left;
    this.clients.delete(client); // cool-down over: a fresh start
    return 0;
  }

  /** Records a wrong token from `client`. */
  fail(client: string): void {
    const now = this.now();
    let f = this.clients.get(client);
    this.clients.delete(client);
    if (!f || now - f.windowStart >= this.limits.windowMs)
      f = { windowStart: now, count: 0, blockedUntil: 0 };
    f.count++;
    if (f.count >= this.limits.maxFailures) f.blockedUntil = now + this.limits.coolDownMs;
    this.clients.set(client, f);
    for (const oldest of this.clients.keys()) {
      if (this.clients.size <= this.limits.maxTracked) break;
      this.clients.delete(oldest);
    }
  }
}

/** The throttle key of a peer address: IPv4 as is, IPv6 as its /64. */
export function clientKey(address: string | undefined): string {
  if (address === undefined) return 'unknown';
  const a = address.toLowerCase().split('%')[0]!;
  if (a.startsWith('::ffff:') && isIP(a.slice(7)) === 4) return a.slice(7);
  if (isIP(a) !== 6) return a;
  const [head = '', tail] = a.split('::');
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  // A trailing dotted quad stands for two groups; only the first four matter here.
  const count = (gs: string[]) => gs.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const zeros = tail === undefined ? 0 : 8 - count(h) - count(t);
  return `${[...h, ...Array<string>(zeros).fill('0'), ...t]
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
