/**
 * The MySQL/MariaDB store clock in epoch ms. `UTC_TIMESTAMP(6)` does not depend on the session
 * `time_zone` (unlike `UNIX_TIMESTAMP(NOW())`, which folds DST), and like every temporal function
 * but SYSDATE() it is evaluated once per statement, so a statement that names it twice sees one
 * instant.
 */
export const MYSQL_NOW = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";
