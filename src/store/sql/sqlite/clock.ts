/**
 * The SQLite store clock in epoch ms: the host's wall clock as SQLite itself reads it (not the JS
 * `Date.now()`, which tests and apps may patch). `julianday('now')` has millisecond resolution and
 * is stable within one statement; ROUND undoes the floating-point error of the conversion (a bare
 * CAST would sometimes truncate …999.9998 one millisecond short). Works on every SQLite version,
 * unlike `unixepoch('subsec')` (3.42+).
 */
export const SQLITE_NOW = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";
