/**
 * The PostgreSQL store clock in epoch ms. `clock_timestamp()` is the server's wall clock at the
 * moment of evaluation (unlike `now()`, which is frozen at transaction start); statements that need
 * one instant in several places read it once in a `WITH c AS (SELECT … AS now)` CTE: a CTE with a
 * volatile function is never inlined, so it is evaluated exactly once per statement.
 */
export const PG_NOW = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

/** `WITH c AS (…)`: one store-clock instant for the whole statement, as `c.now`. */
export const PG_NOW_CTE = `WITH c AS (SELECT ${PG_NOW} AS now)`;
