/**
 * A `Redactor` hides a fixed set of secrets in text: each occurrence becomes `***`. It is built
 * once from the secrets known when it is created (see secrets.ts for which ones the CLI knows).
 *
 * - Secrets of at least `MIN_SECRET_LENGTH` (8) characters are replaced wherever they occur, also
 *   inside a word.
 * - Shorter ones are not searched for at all: any short string is also an ordinary word or part
 *   of one (a token `short` turned "is too short" into "is too ***"), and a secret that short is
 *   guessable anyway. The CLI refuses them where they are configured instead (secrets.ts).
 * - At one position the longest secret wins (a URL-encoded form before its decoded prefix); the
 *   scan then resumes after the match, like `String.prototype.replace`.
 *
 * `stream()` redacts text that arrives in chunks (a command's stdout): a secret split across
 * chunks is still caught. Invariant: the concatenation of everything a stream returns equals
 * `redact(concatenation of every chunk)`, however the text was chunked.
 */

/** Secrets shorter than this are not searched for (see the file comment). */
export const MIN_SECRET_LENGTH = 8;

export const REDACTED = '***';

/** Incremental redaction of one stream of text. */
export interface RedactingStream {
  /** Adds a chunk; returns the redacted text that can no longer be part of a secret (maybe ''). */
  push(chunk: string): string;
  /** The end of the stream: returns the rest of the text, redacted. */
  end(): string;
}

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}

export class Redactor {
  /** Matches any secret (longest alternative first); `undefined` when there is none. */
  private readonly pattern: RegExp | undefined;
  /**
   * Characters of a stream held back so a secret can still complete: the longest secret's length
   * (a match starting before them ends within the text seen so far).
   */
  private readonly holdBack: number;
  /** No secret contains a newline, so text up to the last newline of a stream is final. */
  private readonly lineSafe: boolean;

  constructor(secrets: Iterable<string | undefined>) {
    const unique = [
      ...new Set(
        [...secrets].filter((s): s is string => typeof s === 'string' && s.length >= MIN_SECRET_LENGTH),
      ),
    ];
    unique.sort((a, b) => b.length - a.length);
    this.pattern = unique.length === 0 ? undefined : new RegExp(unique.map(escapeRegExp).join('|'), 'gu');
    this.holdBack = unique[0]?.length ?? 0;
    this.lineSafe = unique.every((s) => !s.includes('\n'));
  }

  /** Whether there is anything to hide. */
  get empty(): boolean {
    return this.pattern === undefined;
  }

  /** `text` with every secret replaced by `***`. */
  redact(text: string): string {
    return this.redactUpTo(text, 0, text.length).out;
  }

  /** A stream whose output is the redacted concatenation of its chunks (see the file comment). */
  stream(): RedactingStream {
    // `pending`: raw text not returned yet.
    let pending = '';
    const take = (final: boolean): string => {
      if (this.pattern === undefined) {
        const all = pending;
        pending = '';
        return all;
      }
      // Text before `cut` is final: a secret starting there ends within `pending`, or cannot
      // cross the last newline.
      let cut = final ? pending.length : Math.max(0, pending.length - this.holdBack);
      if (!final && this.lineSafe) cut = Math.max(cut, pending.lastIndexOf('\n') + 1);
      const { out, end } = this.redactUpTo(pending, 0, cut);
      pending = pending.slice(end);
      return out;
    };
    return {
      push: (chunk) => {
        pending += chunk;
        return take(false);
      },
      end: () => take(true),
    };
  }

  /**
   * Redacts `text` from `from` on, returning the redacted text and where it stopped: at `cut`, or
   * later when a match that starts before `cut` ends after it. `text` before `from` is context only.
   */
  private redactUpTo(text: string, from: number, cut: number): { out: string; end: number } {
    const pattern = this.pattern;
    if (pattern === undefined) return { out: text.slice(from, cut), end: cut };
    let out = '';
    let pos = from;
    pattern.lastIndex = from;
    for (let m = pattern.exec(text); m !== null && m.index < cut; m = pattern.exec(text)) {
      out += text.slice(pos, m.index) + REDACTED;
      pos = m.index + m[0].length;
    }
    const end = Math.max(pos, cut);
    return { out: out + text.slice(pos, end), end };
  }
}
