/**
 * The MySQL/MariaDB store clock in epoch ms. `UTC_TIMESTAMP(6)` does not depend on the session
 * `time_zone` (unlike `UNIX_TIMESTAMP(NOW())`, which folds DST), and like every temporal function
 * but SYSDATE() it is evaluated once per statement, so a statement that names it twice sees one
 * instant. The epoch is a `TIMESTAMP '…'` literal, not a string: a string is parsed into a
 * datetime on every evaluation (0.25 µs against 0.09 µs on MariaDB 10.11, and the lock path
 * evaluates this four to five times per cycle), the literal once, with the same value.
 */
export const MYSQL_NOW =
  "(TIMESTAMPDIFF(MICROSECOND, TIMESTAMP '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";

/**
 * The clock of a script (acquire and apply batches): read once by the script's first statement
 * ({@link MYSQL_SET_SCRIPT_NOW}) into a user variable of the connection, which the statements
 * after it name instead of the ~90-character expression — a batch of 1,000 keys named it 3,000
 * times, and parsing those was a third of the acquire upsert's time on MariaDB 10.11.
 *
 * Every script sets it before any statement reads it, on the one connection it runs on, so a value
 * an earlier script left on a pooled connection is never read. One instant for the whole script is
 * what each single statement already had (MySQL reads the clock once per statement, when it starts,
 * before it waits for any row lock); it is only a few statements earlier. Judging expiry at an
 * earlier instant can only keep a lease that has just expired (a grant then waits for the next
 * attempt; a release by its holder succeeds instead of finding it lapsed, and nobody else can have
 * taken it meanwhile, or its token would no longer match).
 */
export const MYSQL_SCRIPT_NOW = '@oncely_now';
export const MYSQL_SET_SCRIPT_NOW = `SET ${MYSQL_SCRIPT_NOW} = ${MYSQL_NOW}`;
