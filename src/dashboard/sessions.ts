import { createHash, randomBytes } from 'node:crypto';

/**
 * Browser sessions of a dashboard with a token: a random id per successful `?token=` login, kept
 * in this process only.
 *
 * - An id is 32 random bytes: unguessable, unrelated to the token, and dead once it expires, is
 *   evicted, or the process restarts (restart = revoke every session).
 * - A session ends after `idleMs` without a request (sliding) and `maxAgeMs` after login whatever
 *   happens.
 * - At most `max` sessions: a new login evicts the least recently used one, so logins in a loop
 *   cannot grow memory.
 * - The map is keyed by the SHA-256 of the id, so a lookup's timing says nothing about the ids held.
 */
export interface SessionLimits {
  idleMs: number;
  maxAgeMs: number;
  max: number;
}

export const SESSION_LIMITS: SessionLimits = {
  idleMs: 12 * 3_600_000,
  maxAgeMs: 7 * 86_400_000,
  max: 1_000,
};

interface Session {
  createdAt: number;
  lastSeen: number;
}

export class Sessions {
  /** Least recently used first (Map keeps insertion order; a touch re-inserts). */
  private readonly byDigest = new Map<string, Session>();

  constructor(
    private readonly limits: SessionLimits = SESSION_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.byDigest.size;
  }

  /** A new session; returns its id (the cookie value). */
  create(): string {
    const now = this.now();
    this.dropIdle(now);
    while (this.byDigest.size >= this.limits.max) {
      const oldest = this.byDigest.keys().next().value;
      if (oldest === undefined) break;
      this.byDigest.delete(oldest);
    }
    const id = randomBytes(32).toString('base64url');
    this.byDigest.set(digest(id), { createdAt: now, lastSeen: now });
    return id;
  }

  /** Whether `id` is a live session; a live one's idle timer restarts. */
  touch(id: string | undefined): boolean {
    if (id === undefined || id === '' || id.length > 100) return false;
    const key = digest(id);
    const session = this.byDigest.get(key);
    if (!session) return false;
    const now = this.now();
    this.byDigest.delete(key);
    if (this.expired(session, now)) return false;
    session.lastSeen = now;
    this.byDigest.set(key, session);
    return true;
  }

  private expired(s: Session, now: number): boolean {
    return now - s.lastSeen >= this.limits.idleMs || now - s.createdAt >= this.limits.maxAgeMs;
  }

  /** Idle sessions sit at the front (least recently used first). */
  private dropIdle(now: number): void {
    for (const [key, s] of this.byDigest) {
      if (now - s.lastSeen < this.limits.idleMs) break;
      this.byDigest.delete(key);
    }
  }
}

function digest(id: string): string {
  return createHash('sha256').update(id, 'utf8').digest('base64url');
}
