/**
 * Where the etcd store keeps what, and how values are encoded. Every key of one store starts with
 * the namespace `<prefix>/` (the prefix is letters, digits and `_`, so no namespace is a prefix of
 * another's):
 *
 *   <p>/schema                  schema version marker ("1"), written by migrate()
 *   <p>/fence                   fence base: store time (ms) when the fence was first written; never
 *                               swept. Tokens are (base + revision) * 1000 + index (see below).
 *   <p>/lease/<key>             "<expiresAt:16>|<token>|<acquiredAt>|<owner>"
 *   <p>/lease-exp/<exp:16>/<key>  empty: expiry index of leases, for a bounded sweep
 *   <p>/rec/<key>               "<expiresAt:16 or empty>|<value>"
 *   <p>/rec-ttl/<key>           "<expiresAt:16>": only for records with a ttl, so count() reads
 *                               small values, never the records themselves
 *   <p>/rec-exp/<exp:16>/<key>  empty: expiry index of records, for a bounded sweep
 *
 * Times are written as 16 zero-padded decimal digits, so etcd's byte-wise value comparison orders
 * them as numbers: a lease is expired exactly when `value(lease) < pad(now + 1)` (a value that
 * starts with a smaller time is smaller; one that starts with `pad(now + 1)` or more is not).
 *
 * Tokens. A grant writes the token field as `#<i>` (i = the request's index in its batch, < 1000):
 * the token is then `(base + mod_revision) * 1000 + i`, where mod_revision is the revision of the
 * transaction that granted it. etcd revisions are store-wide and strictly increase with every
 * write transaction, and are never reused (deleting or sweeping a key does not lower them), so a
 * later grant of a key always has a higher token; `i` keeps the grants of one batch distinct. A
 * rewrite of a held lease (extend, release with holdUntil) changes its mod_revision, so it writes
 * the token out in decimal instead. `base` (the fence key) makes tokens survive losing the whole
 * etcd data set: a new cluster restarts revisions at 1, but its fence base is the store time of
 * the restart, larger than the old base plus the old revision count as long as the old cluster
 * averaged fewer than one write per millisecond since its base was written.
 */

/** Largest index in one acquire batch, plus one: the token multiplier. */
export const TOKEN_SPREAD = 1000;
const TIME_WIDTH = 16;

const utf8 = (text: string) => Buffer.from(text, 'utf8');

/** A time as 16 zero-padded decimal digits (byte order = numeric order). */
export function padTime(ms: number): string {
  return String(Math.max(0, Math.trunc(ms))).padStart(TIME_WIDTH, '0');
}

/** The byte strings of one store's key spaces. */
export class Layout {
  readonly schema: Buffer;
  readonly fence: Buffer;
  private readonly ns: string;

  constructor(prefix: string) {
    this.ns = `${prefix}/`;
    this.schema = utf8(`${this.ns}schema`);
    this.fence = utf8(`${this.ns}fence`);
  }

  lease(key: string): Buffer {
    return utf8(`${this.ns}lease/${key}`);
  }
  leaseExp(expiresAt: number, key: string): Buffer {
    return utf8(`${this.ns}lease-exp/${padTime(expiresAt)}/${key}`);
  }
  record(key: string): Buffer {
    return utf8(`${this.ns}rec/${key}`);
  }
  recordTtl(key: string): Buffer {
    return utf8(`${this.ns}rec-ttl/${key}`);
  }
  recordExp(expiresAt: number, key: string): Buffer {
    return utf8(`${this.ns}rec-exp/${padTime(expiresAt)}/${key}`);
  }

  /** `[start, end)` of every key of `space` starting with `prefix`. */
  range(space: 'lease' | 'rec' | 'rec-ttl', prefix: string): { start: Buffer; end: Buffer } {
    const start = utf8(`${this.ns}${space}/${prefix}`);
    return { start, end: prefixEnd(start) };
  }

  /** `[start, end)` of the expiry index entries of `space` with expiresAt <= now. */
  dueRange(space: 'lease-exp' | 'rec-exp', now: number): { start: Buffer; end: Buffer } {
    return { start: utf8(`${this.ns}${space}/`), end: utf8(`${this.ns}${space}/${padTime(now + 1)}`) };
  }

  /** The oncely key of a full etcd key of `space` (the namespace and space stripped). */
  keyOf(space: 'lease' | 'rec' | 'rec-ttl', full: Buffer): string {
    return full.subarray(Buffer.byteLength(`${this.ns}${space}/`)).toString('utf8');
  }

  /** `[expiresAt, key]` of an expiry index entry of `space`. */
  parseExp(space: 'lease-exp' | 'rec-exp', full: Buffer): [number, string] {
    const rest = full.subarray(Buffer.byteLength(`${this.ns}${space}/`)).toString('utf8');
    return [Number(rest.slice(0, TIME_WIDTH)), rest.slice(TIME_WIDTH + 1)];
  }
}

/** The smallest byte string greater than every string starting with `start` (etcd's prefix end). */
export function prefixEnd(start: Buffer): Buffer {
  const end = Buffer.from(start);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // all 0xff: "every key after", etcd's "\0" range end
}

/** A lease as stored; `token` is resolved against the key's mod_revision and the fence base. */
export interface StoredLease {
  expiresAt: number;
  /** The decimal token, or `undefined` when the value says "derived" (`#<index>`). */
  token: number | undefined;
  index: number;
  acquiredAt: number;
  owner: string;
}

export function encodeLease(expiresAt: number, token: string, acquiredAt: number, owner: string): Buffer {
  return utf8(`${padTime(expiresAt)}|${token}|${acquiredAt}|${owner}`);
}

export function decodeLease(value: Buffer): StoredLease {
  const text = value.toString('utf8');
  const a = text.indexOf('|');
  const b = text.indexOf('|', a + 1);
  const c = text.indexOf('|', b + 1);
  const field = text.slice(a + 1, b);
  const derived = field.startsWith('#');
  return {
    expiresAt: Number(text.slice(0, a)),
    token: derived ? undefined : Number(field),
    index: derived ? Number(field.slice(1)) : 0,
    acquiredAt: Number(text.slice(b + 1, c)),
    owner: text.slice(c + 1),
  };
}

/** The fencing token of a stored lease (see the header). */
export function leaseToken(stored: StoredLease, modRevision: string, base: number): number {
  return stored.token ?? (base + Number(modRevision)) * TOKEN_SPREAD + stored.index;
}

export function encodeRecord(value: string, expiresAt: number | null): Buffer {
  return utf8(`${expiresAt === null ? '' : padTime(expiresAt)}|${value}`);
}

export function decodeRecord(stored: Buffer): { value: string; expiresAt: number | null } {
  const text = stored.toString('utf8');
  const bar = text.indexOf('|');
  return { value: text.slice(bar + 1), expiresAt: bar === 0 ? null : Number(text.slice(0, bar)) };
}
