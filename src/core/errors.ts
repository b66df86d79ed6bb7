/**
 * The few named errors oncely throws. Every failure that reaches a user is an `OncelyError` with a
 * stable `code`; the original error, if any, is kept in `cause`.
 *
 * @example
 * try { await openStore('nope:') } catch (e) { if (e instanceof OncelyError && e.code === 'INVALID_ARGUMENT') … }
 */
export type OncelyErrorCode =
  /** Bad input: the message says which argument and what is allowed. */
  | 'INVALID_ARGUMENT'
  /** What the call names (a job, a stored schedule) is not in the store: the message says which. */
  | 'NOT_FOUND'
  /** The store could not be reached or answered with an error it may recover from. */
  | 'STORE_UNAVAILABLE'
  /** A lease was lost (expired or taken over) while its holder still needed it. */
  | 'LOCK_LOST'
  /** The store's schema is missing, newer than this version understands, or broken. */
  | 'SCHEMA'
  /** The store or lock was used after `close()` / `release()`. */
  | 'CLOSED'
  /** A run was aborted because it exceeded its timeout. */
  | 'TIMEOUT'
  /** A run's signal was aborted because a newer fire time of its job came (overlap 'replace'). */
  | 'REPLACED'
  /** Anything else; `cause` holds the original. */
  | 'INTERNAL';

/**
 * The error oncely throws (and hands to events and logs): a stable `code` to branch on, a message
 * that says what to fix, and the original error, if any, in `cause`.
 *
 * @example
 * try {
 *   await openStore('sqllite:./oncely.db');
 * } catch (e) {
 *   if (e instanceof OncelyError && e.code === 'INVALID_ARGUMENT') console.error(e.message);
 *   else throw e;
 * }
 */
export class OncelyError extends Error {
  /** What kind of failure it is; see {@link OncelyErrorCode}. */
  readonly code: OncelyErrorCode;

  constructor(code: OncelyErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'OncelyError';
    this.code = code;
  }

  /** Wraps any thrown value; an `OncelyError` passes through unchanged. */
  static from(err: unknown, code: OncelyErrorCode = 'INTERNAL', message?: string): OncelyError {
    if (err instanceof OncelyError) return err;
    const text = message ?? (err instanceof Error ? err.message : String(err));
    return new OncelyError(code, text, { cause: err });
  }
}

/** An `INVALID_ARGUMENT` error with `message`, for `throw invalidArgument(…)`. */
export function invalidArgument(message: string): OncelyError {
  return new OncelyError('INVALID_ARGUMENT', message);
}
